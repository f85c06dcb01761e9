"""Named unit constants. Internally everything is SI: seconds, bytes, FLOPs, watts, USD."""

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
PB = 1e15
KiB = 2**10
MiB = 2**20
GiB = 2**30
TiB = 2**40

KILO = 1e3
MEGA = 1e6
GIGA = 1e9
TERA = 1e12
PETA = 1e15

BITS_PER_BYTE = 8

MINUTE_S = 60.0
HOUR_S = 3600.0
DAY_S = 86400.0
WEEK_S = 7 * DAY_S
YEAR_S = 365.0 * DAY_S

# Hours in a year and an average month as clouds bill them (365 days: 8,760 h; / 12 = 730 h).
# The one definition every monthly or yearly figure (service cost, energy, reserved terms,
# failures per month) uses.
HOURS_PER_YEAR = 8760.0
HOURS_PER_MONTH = HOURS_PER_YEAR / 12.0

# Version of the JSON every `--format json` output carries (report/data/report.schema.json,
# docs/json-schema.md). 2: typed sizing; the chosen configuration carries the sized run time,
# goodput and cost; storage's checkpoint targets are `checkpoint_*_target_s`.
REPORT_SCHEMA_VERSION = 2

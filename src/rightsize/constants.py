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

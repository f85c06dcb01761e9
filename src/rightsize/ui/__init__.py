"""The local planner in the browser (`rightsize ui`): a form over the spec, live re-plans,
comparisons of saved what-ifs, charts, drill-down to sources, downloads and shareable links.
It sits over `rightsize.api` (and the report and export renderers) and computes no figure of its
own. Starlette and uvicorn load only when the command runs."""

"""Measuring real workloads: the profiler, telemetry and calibration. Importing this package
never imports torch; the modules that need it import it lazily."""

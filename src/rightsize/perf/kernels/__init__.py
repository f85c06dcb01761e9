"""Measured-kernel layer: tables of measured operation latencies and timing from them."""

"""rightsize: right-size AI infrastructure with measured, explained plans."""

__version__ = "0.1.0"

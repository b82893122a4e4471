"""Tests of the analytics layer: recorder, collector, synthetic logs and the Spark report."""

//! Tests of the change transaction against a kernel in memory.

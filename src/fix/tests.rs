//! Tests of `celcost fix`.

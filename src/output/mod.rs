//! The outputs: one module per format, each rendering the same reports ([`crate::report`]).
//! For people: [`table`] and [`markdown`] (which share [`rows`]); for machines: [`json`]; for CI:
//! [`sarif`] and [`github`], both from the run's [`findings`]; and [`diff`], the outputs of
//! `celcost diff`. The number formatting they share is the report's
//! ([`crate::report::format`]), which the advice's texts use too.

pub mod diff;
pub mod findings;
pub mod github;
pub mod json;
pub mod markdown;
pub mod rows;
pub mod sarif;
pub mod table;

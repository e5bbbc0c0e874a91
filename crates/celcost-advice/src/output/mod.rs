//! The outputs: one module per format, each rendering the same reports ([`celcost_core::report`]).
//! For people: [`table`] and [`markdown`] (which share [`rows`]); for machines: [`json`]; for CI:
//! [`sarif`] and [`github`], both from the run's [`findings`], and [`junit`] (test reports, from
//! the same findings); and [`diff`], the outputs of `celcost diff`; [`headroom`], `celcost headroom`'s. Which format renders what is
//! chosen in one place, the command line's `celcost::cli::OutputFormat::render` (a new format:
//! its module here, a variant and an arm there). The number formatting they share is the
//! report's ([`celcost_core::report::format`]), which the advice's texts use too.

pub mod diff;
pub mod findings;
pub mod github;
pub mod headroom;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod openreports;
pub mod rows;
pub mod sarif;
pub mod table;

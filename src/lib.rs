pub mod budget;
pub mod cel;
pub mod ci;
pub mod cli;
pub mod controller;
pub mod crd;
pub mod diff;
pub mod estimate;
pub mod goregexp;
pub mod input;
pub mod locate;
pub mod positions;
pub mod report;
pub mod schema;
pub mod vap;
pub mod versions;

pub use estimate::Estimator;

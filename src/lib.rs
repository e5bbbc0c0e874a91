pub mod budget;
pub mod cel;
pub mod cli;
pub mod controller;
pub mod crd;
pub mod estimate;
pub mod goregexp;
pub mod input;
pub mod report;
pub mod schema;
pub mod suggest;
pub mod vap;
pub mod versions;

pub use estimate::Estimator;

pub mod cel;
pub mod report;

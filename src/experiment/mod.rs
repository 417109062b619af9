//! The experiment harness behind `fwsvm bench` and `fwsvm grid`'s figures: the evaluation
//! matrix ([`matrix`]) and its report ([`report`]), the scaling bench ([`scale`]), the
//! statistical tests ([`stats`]) and the charts ([`charts`]). The CLI only parses arguments,
//! checks files and shows progress.

pub mod charts;
pub mod matrix;
pub mod report;
pub mod scale;
pub mod stats;

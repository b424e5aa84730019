//! `exectl bench` as data: the levels and SLOs it was asked for, the SUT's samples on one clock with the
//! generator's, each level's figures, and the verdict (capacity, knee, limiting component). Pure: the
//! runner (`crate::bench`) measures, this decides, `report` formats.

pub mod browser;
pub mod compare;
pub mod cpu;
pub mod decimal;
pub mod fault;
pub mod figures;
pub mod growth;
pub mod incidents;
pub mod levels;
pub mod limiting;
pub mod recorded;
pub mod report;
pub mod results;
pub mod settings;
pub mod slo;
pub mod timeline;
pub mod trend;
pub mod verdict;

pub use cpu::{busiest, AppThreads, CpuScale};
pub use figures::{LevelFigures, Pcts};
pub use levels::{parse_levels, Levels};
pub use limiting::{limiting_component, Known, Limiting, Resource};
pub use results::{Results, RunState, SamplerCost};
pub use slo::{Objective, SloCheck, Slos, OBJECTIVES};
pub use timeline::{
    AtOnce, ContainerSample, ContainerState, GeneratorSample, InstanceSample, LevelSpan,
    ProxySample, Sample,
};
pub use verdict::{Besides, LeakCheck, LevelResult, Verdict};

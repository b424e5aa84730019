//! Every integration test of `exectl`, one binary: each file of `tests/` is a module of it. One binary
//! instead of one per file: the shared helpers (`common`, `load_support`) are compiled once and one
//! executable is linked instead of ~60, which cut a from-scratch build of the tests by about a minute on two
//! cores (issue #50). nextest still runs each test in its own process; its filters name a file's tests
//! as `test(/^FILE::/)` (.config/nextest.toml).

mod common;
mod load_support;

mod bad_values;
mod bench_churn;
mod bench_engine;
mod bench_fault;
mod bench_findings;
mod bench_incidents;
mod bench_plateau;
mod browser_probe;
mod campaign_engine;
mod campaign_resume_cli;
mod core_is_pure;
mod deploy_engine;
mod deploy_restarts;
mod deploy_workers;
mod docker_proxy;
mod dockerd_script;
mod doctor;
mod golden;
mod host_tune;
mod host_tune_script;
mod k6_upstream;
mod library;
mod library_without_clap;
mod load_arrivals;
mod load_bad_input;
mod load_collab;
mod load_generators;
mod load_idle;
mod load_login_burst;
mod load_processes;
mod load_single;
mod load_stack;
mod load_stall;
mod lock_engine;
mod module_graph;
mod plan;
mod preflight_engine;
mod prepare_api;
mod prepare_engine;
mod prepare_errors_engine;
mod prepare_fidelity;
mod prepare_manifests;
mod readiness_engine;
mod record_cli;
mod refused_before_run;
mod remote_no_sftp;
mod remote_sut;
mod render_cli;
mod report_browser;
mod runs_bench;
mod schema_files;
mod secret_names_engine;
mod secrets_cli;
mod set_secret_engine;
mod status_engine;
mod sut_harness;
mod swarm_deploy;
mod sweep_cli;
mod sweep_engine;
mod sweep_workload;
mod target_cli;

/// With `autotests = false`, a file of `tests/` left out of the list above would be neither compiled nor
/// run, and nothing would say so.
#[test]
fn every_file_of_tests_is_a_module_of_the_suite() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let list = std::fs::read_to_string(dir.join("suite.rs")).unwrap();
    let mut missing: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .filter_map(|p| Some(p.file_stem()?.to_str()?.to_owned()))
        .filter(|stem| stem != "suite" && !list.contains(&format!("\nmod {stem};\n")))
        .collect();
    missing.sort();
    assert!(
        missing.is_empty(),
        "tests/{{{}}}.rs: add `mod NAME;` for each to tests/suite.rs",
        missing.join(",")
    );
}

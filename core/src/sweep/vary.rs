//! `--vary VAR=V1,V2,...`: the one variable of a sweep and its values. VAR is a spec setting by its
//! exectl.yaml key (`instances`, `nginx`, `cpus`, …), an image (`image.app`) or an app variable
//! (`env.DB_POOL_MAX`), whose value is set on the spec input as the flag would set it; or the workload
//! each point's bench runs (`users_per_project`, `scenario`, `interval`), which leaves the spec alone.

use crate::error::UsageError;
use crate::spec::{Raw, SpecInput};
use crate::spec_settings::{setting, Kind, Setting, SETTINGS};

/// The services an image can be set for (`--images` keys).
pub const IMAGE_SERVICES: &[&str] = &[
    "app", "mariadb", "postgres", "redis", "nginx", "traefik", "sqlite",
];

/// Settings a sweep cannot vary: they say which stack and where, not how it is configured.
const NOT_VARIABLES: &[&str] = &["topology", "stack", "target"];

/// Where a credential goes instead of a sweep's variable (`secrets::refuse_credential`).
pub const NOT_A_VARIABLE: &str = "a secret is not a variable: give it once, with exectl sweep --set-secret NAME, or in a campaign file's secrets: [NAME], its value read from exectl's environment; it then goes only to the stack's 0600 .env";

/// Most values of one variable: a sweep is a handful of points, each a deploy and a bench.
pub const MAX_VALUES: usize = 32;

#[derive(Debug, Clone, PartialEq)]
pub enum Var {
    Setting(&'static str),
    Image(String),
    Env(String),
    Workload(Workload),
}

/// The workload of each point's bench as a variable: the deployment stays, the load changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    /// The room size: each value seeds (and benches) a manifest of its own with that many users in
    /// each project.
    UsersPerProject,
    Scenario,
    /// The action interval of collab and editing.
    Interval,
}

impl Workload {
    pub const ALL: [Workload; 3] = [
        Workload::UsersPerProject,
        Workload::Scenario,
        Workload::Interval,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Workload::UsersPerProject => "users_per_project",
            Workload::Scenario => "scenario",
            Workload::Interval => "interval",
        }
    }

    /// Most users in one room a sweep asks for.
    pub const MAX_ROOM: u64 = 100_000;

    /// A value of this variable, checked: (what is wrong, how to fix it).
    fn check(self, value: &str) -> Result<(), (String, String)> {
        let invalid = |i: crate::units::Invalid| (i.problem, i.fix);
        match self {
            Workload::UsersPerProject => crate::units::count_in(value, 1, Self::MAX_ROOM)
                .map(|_| ())
                .map_err(invalid),
            Workload::Scenario => match crate::load::Scenario::parse(value).is_some() {
                true => Ok(()),
                false => Err((
                    format!("{value} is no scenario"),
                    format!(
                        "vary scenario over {}",
                        crate::load::Scenario::names().join(", ")
                    ),
                )),
            },
            Workload::Interval => crate::units::duration_in(
                value,
                std::time::Duration::from_millis(10),
                std::time::Duration::from_secs(3600),
            )
            .map(|_| ())
            .map_err(invalid),
        }
    }
}

/// One variable and its values, in the order the sweep visits them.
#[derive(Debug, Clone, PartialEq)]
pub struct Vary {
    pub var: Var,
    pub values: Vec<String>,
}

impl Var {
    /// As the user names it: `nginx`, `image.app`, `env.DB_POOL_MAX`.
    pub fn name(&self) -> String {
        match self {
            Var::Setting(k) => k.to_string(),
            Var::Image(s) => format!("image.{s}"),
            Var::Env(n) => format!("env.{n}"),
            Var::Workload(w) => w.name().to_string(),
        }
    }

    /// Set this variable to `value` on `input`, as its flag would (later wins over exectl.yaml).
    pub fn apply(&self, input: &mut SpecInput, value: &str) {
        match self {
            Var::Setting(k) => {
                let s: &Setting = setting(k).expect("checked when parsed");
                *(s.slot)(input) = Some(Raw::flag("--vary", value));
            }
            Var::Image(s) => input.images.push((s.clone(), Raw::flag("--vary", value))),
            Var::Env(n) => input.env.push(Raw::flag("--vary", format!("{n}={value}"))),
            // The bench's, not the spec's: the sweep sets it on each point's load (`ops::sweep`).
            Var::Workload(_) => {}
        }
    }

    /// The workload variable this is (None: one of the spec).
    pub fn workload(&self) -> Option<Workload> {
        match self {
            Var::Workload(w) => Some(*w),
            _ => None,
        }
    }

    /// Whether a run record's variable (as `runs diff` names it) may move when this one does, besides
    /// the knobs its own value changes: an image's digest follows its reference (`image.app` owns the
    /// digests of `app` and of HA's `app-1`, `app-2`, …).
    pub fn owns_digest(&self, variable: &str) -> bool {
        let Var::Image(s) = self else { return false };
        match variable
            .strip_prefix("image ")
            .and_then(|v| v.strip_prefix(s.as_str()))
        {
            Some("") => true,
            Some(n) => n
                .strip_prefix('-')
                .is_some_and(|i| i.parse::<u32>().is_ok()),
            None => false,
        }
    }

    /// A variable by its name (`nginx`, `image.app`, `env.NAME`), as `name` gives it back; errors name
    /// `field`.
    pub fn parse(field: &str, text: &str) -> Result<Var, UsageError> {
        let bad = |problem: String, fix: String| UsageError::new(field, text, problem, fix);
        if let Some(w) = Workload::ALL.into_iter().find(|w| w.name() == text) {
            return Ok(Var::Workload(w));
        }
        if let Some(s) = text.strip_prefix("image.") {
            return match IMAGE_SERVICES.contains(&s) {
                true => Ok(Var::Image(s.into())),
                false => Err(bad(
                    format!("no image {s:?}"),
                    format!("vary one of image.{}", IMAGE_SERVICES.join(", image.")),
                )),
            };
        }
        if let Some(n) = text.strip_prefix("env.") {
            let ok = n
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            return match ok {
                true => Ok(Var::Env(n.into())),
                false => Err(bad(
                    format!("{n:?} is not an environment variable name"),
                    "give env.NAME with NAME of letters, digits and _, e.g. env.DB_POOL_MAX".into(),
                )),
            };
        }
        match setting(text) {
            Some(s) if !NOT_VARIABLES.contains(&s.key) && s.kind != Kind::FileOnly => {
                Ok(Var::Setting(s.key))
            }
            Some(s) => Err(bad(
                format!("{} names the stack, not a setting of it", s.key),
                "vary a setting of the stack (sweep one stack; run two sweeps for two stacks)"
                    .into(),
            )),
            None => Err(bad(
                "no such setting".into(),
                format!(
                    "vary one of {}, image.SERVICE, env.NAME, or the workload: users_per_project, scenario or interval",
                    SETTINGS
                        .iter()
                        .filter(|s| !NOT_VARIABLES.contains(&s.key))
                        .map(|s| s.key)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )),
        }
    }
}

/// `VAR=V1,V2,...`, named in errors by `field` (`--vary`, or the sweep file's key).
pub fn parse(field: &str, text: &str) -> Result<Vary, UsageError> {
    let (name, values) = text.split_once('=').ok_or_else(|| {
        UsageError::new(
            field,
            text,
            "no values",
            "give VAR=V1,V2,..., e.g. --vary nginx=baseline-default,tuned-least-conn",
        )
    })?;
    let var = Var::parse(field, name.trim())?;
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    // Before any fault that says the text back: a point's values go into every record and report.
    for v in &values {
        crate::secrets::refuse_credential(field, &var.name(), v, NOT_A_VARIABLE)?;
    }
    if values.iter().any(String::is_empty) {
        return Err(UsageError::new(
            field,
            text,
            "an empty value",
            "separate the values with single commas",
        ));
    }
    check_values(field, text, &values)?;
    if let Some(w) = var.workload() {
        for v in &values {
            w.check(v).map_err(|(problem, fix)| {
                UsageError::new(field, text, format!("{v}: {problem}"), fix)
            })?;
        }
    }
    Ok(Vary { var, values })
}

/// The values of one variable: at least one, at most `MAX_VALUES`, each once.
pub fn check_values(field: &str, text: &str, values: &[String]) -> Result<(), UsageError> {
    if values.is_empty() || values.len() > MAX_VALUES {
        return Err(UsageError::new(
            field,
            text,
            format!("{} values", values.len()),
            format!("give 1 to {MAX_VALUES} values"),
        ));
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(UsageError::new(
                field,
                text,
                format!("{v} is given twice"),
                "give each value once (--repeat K runs each point K times)",
            ));
        }
    }
    Ok(())
}

/// Every point of the sweep in order: the values (one per variable) and the run (1..=repeat). Repeats
/// are interleaved (A B A B A B, not A A A B B B): a drift over the sweep (a warming cache, a growing
/// database, a neighbour) then spreads over every value instead of setting one block apart from the next.
pub fn points(vary: &[Vary], repeat: u32) -> Vec<(Vec<String>, u32)> {
    let mut cells: Vec<Vec<String>> = vec![vec![]];
    for v in vary {
        cells = cells
            .into_iter()
            .flat_map(|c| {
                v.values.iter().map(move |x| {
                    let mut c = c.clone();
                    c.push(x.clone());
                    c
                })
            })
            .collect();
    }
    (1..=repeat)
        .flat_map(|r| cells.iter().map(move |c| (c.clone(), r)))
        .collect()
}

/// The spec of the point whose values are `values`: `input` with each variable set to its value (as
/// its flag would set it), resolved.
pub fn spec_at(
    mut input: SpecInput,
    vary: &[Vary],
    values: &[String],
) -> Result<crate::spec::Spec, UsageError> {
    for (v, value) in vary.iter().zip(values) {
        v.var.apply(&mut input, value);
    }
    crate::spec::resolve(input)
}

/// A point's workload: the value of each workload variable the sweep varies, typed (each was checked
/// when `--vary` was parsed). None where the sweep does not vary it: the bench's own setting stands.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PointWorkload {
    /// Users per project: the point seeds and benches a manifest of its own with rooms that size.
    pub room: Option<u64>,
    pub scenario: Option<String>,
    pub interval: Option<std::time::Duration>,
}

impl PointWorkload {
    /// The workload of the point whose values (one per variable, as `points` gives them) are `values`.
    pub fn of(vary: &[Vary], values: &[String]) -> PointWorkload {
        let mut w = PointWorkload::default();
        for (v, value) in vary.iter().zip(values) {
            match v.var.workload() {
                Some(Workload::UsersPerProject) => w.room = value.parse().ok(),
                Some(Workload::Scenario) => w.scenario = Some(value.clone()),
                Some(Workload::Interval) => w.interval = crate::units::duration(value).ok(),
                None => {}
            }
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A credential is no variable: its values would be in every point's record and the report. Refused
    /// before any fault that says the text back (a value twice, an empty one), never saying it.
    #[test]
    fn a_credential_is_refused_as_a_variable_without_its_value() {
        for text in [
            "env.SMTP_PASSWORD=hunter2",
            "env.SMTP_PASS=hunter2,hunter2",
            "env.API_KEY=hunter2,,x",
            "env.MAILER_DSN=smtp://u:hunter2@h",
            "env.MAILER_URL=smtp://a:hunter2@h,smtp://b:c@h",
        ] {
            let e = parse("--vary", text).unwrap_err();
            let shown = e.to_string();
            assert_eq!(e.field, "--vary", "{shown}");
            assert!(e.problem.contains("looks like a credential"), "{shown}");
            assert!(
                e.fix.contains("--set-secret") && e.fix.contains("secrets:"),
                "{shown}"
            );
            assert!(!shown.contains("hunter2"), "a secret said back: {shown}");
        }
        assert!(parse("--vary", "env.DB_POOL_MAX=10,20").is_ok());
        assert!(parse("--vary", "env.STANDIN_FAULT=none,slow-relay").is_ok());
    }

    #[test]
    fn a_points_workload_is_typed_and_the_specs_variables_left_out() {
        let vary = [
            parse("--vary", "users_per_project=2,50").unwrap(),
            parse("--vary", "interval=500ms").unwrap(),
            parse("--vary", "instances=1,2").unwrap(),
        ];
        let all = points(&vary, 1);
        let w = PointWorkload::of(&vary, &all[2].0);
        assert_eq!(all[2].0, ["50", "500ms", "1"]);
        assert_eq!(w.room, Some(50));
        assert_eq!(w.interval, Some(std::time::Duration::from_millis(500)));
        assert_eq!(w.scenario, None);
        let s = [parse("--vary", "scenario=idle,collab").unwrap()];
        assert_eq!(
            PointWorkload::of(&s, &["collab".to_string()])
                .scenario
                .as_deref(),
            Some("collab")
        );
        assert_eq!(
            PointWorkload::of(&vary[2..], &["1".to_string()]),
            PointWorkload::default()
        );
    }

    #[test]
    fn settings_images_and_env_are_variables() {
        let v = parse("--vary", "nginx=baseline-default, tuned-ip-hash").unwrap();
        assert_eq!(v.var, Var::Setting("nginx"));
        assert_eq!(v.values, ["baseline-default", "tuned-ip-hash"]);
        let i = parse("--vary", "image.app=a:1,a:2").unwrap();
        assert_eq!(i.var.name(), "image.app");
        assert!(i.var.owns_digest("image app") && !i.var.owns_digest("image nginx"));
        assert!(i.var.owns_digest("image app-2") && !i.var.owns_digest("image application"));
        assert!(
            !v.var.owns_digest("image nginx"),
            "a setting owns no digest"
        );
        let e = parse("--vary", "env.DB_POOL_MAX=10,50").unwrap();
        let mut input = SpecInput::default();
        e.var.apply(&mut input, "50");
        i.var.apply(&mut input, "a:2");
        v.var.apply(&mut input, "tuned-ip-hash");
        assert_eq!(input.env[0].value, "DB_POOL_MAX=50");
        assert_eq!(input.images[0].0, "app");
        assert_eq!(input.nginx.unwrap().value, "tuned-ip-hash");
    }

    #[test]
    fn the_workload_is_a_variable_that_leaves_the_spec_alone() {
        for (text, w) in [
            ("users_per_project=2,10,50,100", Workload::UsersPerProject),
            ("scenario=idle,collab", Workload::Scenario),
            ("interval=500ms,2s", Workload::Interval),
        ] {
            let v = parse("--vary", text).unwrap();
            assert_eq!(v.var, Var::Workload(w));
            assert_eq!(v.var.name(), text.split('=').next().unwrap());
            let mut input = SpecInput::default();
            v.var.apply(&mut input, &v.values[0]);
            assert_eq!(
                format!("{input:?}"),
                format!("{:?}", SpecInput::default()),
                "{text}"
            );
        }
    }

    #[test]
    fn repeats_are_interleaved_and_a_matrix_is_every_pair() {
        let a = parse("--vary", "nginx=x,y").unwrap();
        let b = parse("--vary", "instances=1,2").unwrap();
        let order: Vec<(String, u32)> = points(std::slice::from_ref(&a), 3)
            .into_iter()
            .map(|(v, r)| (v.join(""), r))
            .collect();
        let want = [("x", 1), ("y", 1), ("x", 2), ("y", 2), ("x", 3), ("y", 3)];
        assert_eq!(order, want.map(|(v, r)| (v.to_string(), r)));
        let grid: Vec<Vec<String>> = points(&[a, b], 1).into_iter().map(|p| p.0).collect();
        assert_eq!(grid, [["x", "1"], ["x", "2"], ["y", "1"], ["y", "2"]]);
    }

    #[test]
    fn each_bad_vary_names_what_and_how_to_fix() {
        for (bad, says) in [
            ("nginx", "no values"),
            ("instancez=1,2", "no such setting"),
            ("stack=a,b", "names the stack"),
            ("topology=single,ha", "names the stack"),
            ("image.php=a,b", "no image"),
            ("env.1X=a", "not an environment variable"),
            ("instances=1,,2", "empty value"),
            ("instances=1,2,1", "given twice"),
            ("users_per_project=2,0", "0: out of range"),
            ("users_per_project=2,x", "x: not a whole number"),
            ("scenario=idle,chat", "chat is no scenario"),
            ("interval=1s,5", "5: a duration needs a unit"),
        ] {
            let e = parse("--vary", bad).unwrap_err();
            assert_eq!(e.field, "--vary");
            assert!(e.problem.contains(says), "{bad}: {e}");
            assert!(!e.fix.is_empty());
        }
    }
}

//! A sweep's plan as its results.json keeps it (`plan`): its options besides what results.json holds as
//! fields (the variables, values, repeats, levels or search), typed, every secret as its keyed
//! fingerprint. Written by `ops::sweep` when the sweep begins; `--resume` makes the sweep's options from
//! it again — no command line is kept or read back.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::bench_settings::BenchSettings;
use super::spec_source::SpecSource;
use super::sweep::SweepOptions;
use crate::prepare::plan::{self, EmailPattern, Visibility};
use crate::prepare::{Options, Via};
use crate::sut::TargetSpec;
use exectl_core::error::UsageError;
use exectl_core::spec::SecretValue;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepPlan {
    pub target: TargetSpec,
    /// exectl.yaml, the settings and the images file, read again at each point.
    pub spec: SpecSource,
    /// The sweep file the variables came from: a resume reads it again and refuses one that changed.
    pub sweep_file: Option<FromFile>,
    pub wait_timeout: Duration,
    pub load_images: bool,
    pub seed: SeedPlan,
    pub bench: BenchSettings,
    pub teardown: bool,
}

/// A sweep file and the flags given with it (which win over it): a resume reads the file again and
/// makes the sweep's shape of both, to refuse a file that changed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FromFile {
    pub path: PathBuf,
    pub flags: exectl_core::sweep::file::SweepFile,
}

/// A point's seeding but its accounts and projects (the point's): `prepare::Options` without its plan,
/// the password as its fingerprint when it is not the public default.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SeedPlan {
    pub via: Via,
    pub pattern: String,
    pub visibility: Visibility,
    /// None: the public default password.
    pub password: Option<String>,
    pub bcrypt_cost: u32,
    pub token_ttl: Option<Duration>,
    pub out: Option<PathBuf>,
    pub batch: usize,
    pub schema_timeout: Duration,
}

impl SeedPlan {
    pub fn of(o: &Options) -> SeedPlan {
        SeedPlan {
            via: o.via,
            pattern: o.plan.pattern.text(),
            visibility: o.plan.visibility,
            password: (o.password != plan::DEFAULT_PASSWORD).then(|| {
                SecretValue::new("password", &o.password)
                    .redacted()
                    .to_string()
            }),
            bcrypt_cost: o.bcrypt_cost,
            token_ttl: o.token_ttl,
            out: o.out.clone(),
            batch: o.batch,
            schema_timeout: o.schema_timeout,
        }
    }

    /// The seeding again (one account: each point reshapes it). A password other than the default is
    /// kept as a fingerprint only, and refused.
    pub fn options(&self) -> Result<Options, UsageError> {
        if let Some(print) = &self.password {
            return Err(UsageError::new(
                "--resume",
                print,
                "the sweep seeded its accounts with a password of its own, which is not kept",
                "start a new sweep",
            ));
        }
        let pattern = EmailPattern::parse(&self.pattern)?;
        let shape = plan::shape(1, None, None)?;
        Ok(Options {
            via: self.via,
            plan: plan::plan(shape, &pattern, self.visibility),
            bcrypt_cost: self.bcrypt_cost,
            token_ttl: self.token_ttl,
            out: self.out.clone(),
            batch: self.batch,
            schema_timeout: self.schema_timeout,
            ..Options::seeding(1, None)?
        })
    }
}

impl SweepPlan {
    pub fn of(target: &TargetSpec, o: &SweepOptions) -> SweepPlan {
        SweepPlan {
            target: target.clone(),
            spec: o.spec.clone(),
            sweep_file: o.sweep_file.clone(),
            wait_timeout: o.deploy.wait_timeout,
            load_images: o.deploy.load_images,
            seed: SeedPlan::of(&o.seed),
            bench: o.bench.clone(),
            teardown: o.teardown,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::load::settings::LoadSettings;
    use crate::load::Scenario;

    /// What results.json keeps reads back as it was, but each secret: its fingerprint, never its value.
    #[test]
    fn a_plan_reads_back_as_written_with_its_secrets_as_fingerprints() {
        let mut flags = exectl_core::spec::SpecInput::default();
        flags
            .set("topology", "single")
            .unwrap()
            .set("cpus", "0.5")
            .unwrap();
        flags.env.push(exectl_core::spec::Raw::flag("--set", "A=1"));
        flags
            .secret_env
            .push(exectl_core::spec::Raw::flag("--set-secret", "K=hunter2"));
        let mut seed = Options::seeding(10, None).unwrap();
        seed.bcrypt_cost = 4;
        let plan = SweepPlan {
            target: TargetSpec::local(),
            spec: SpecSource {
                config: Some("/s/exectl.yaml".into()),
                flags,
                images: Some("images.yaml".into()),
                templates: None,
                no_config: false,
            },
            sweep_file: None,
            wait_timeout: Duration::from_secs(300),
            load_images: true,
            seed: SeedPlan::of(&seed),
            bench: BenchSettings {
                load: LoadSettings {
                    scenario: Scenario::LoginBurst,
                    hold: Duration::from_secs(3),
                    ..LoadSettings::default()
                },
                ..BenchSettings::default()
            },
            teardown: true,
        };
        let text = serde_json::to_string(&plan).unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(
            text.contains("\"login-burst\"") && text.contains("K=<secret sha256:"),
            "{text}"
        );
        let back: SweepPlan = serde_json::from_str(&text).unwrap();
        let mut input = back.spec.flags.clone();
        assert_eq!(input.cpus.as_ref().unwrap().value, "0.5");
        assert_eq!(input.env[0].value, "A=1");
        assert_eq!(
            input.secret_env[0].value,
            format!("K={}", SecretValue::new("K", "hunter2").redacted())
        );
        assert_eq!(
            input
                .set("stack", "x")
                .unwrap()
                .stack
                .as_ref()
                .unwrap()
                .value,
            "x"
        );
        assert_eq!(back.bench.load.scenario, Scenario::LoginBurst);
        assert_eq!(back.bench.load.hold, Duration::from_secs(3));
        assert_eq!(back.seed.options().unwrap().bcrypt_cost, 4);
        assert!(back.teardown && back.load_images);
        // A password of the sweep's own is kept as a fingerprint, and a resume is refused.
        let mut own = seed.clone();
        own.password = "s3cret-pw".into();
        let p = SeedPlan::of(&own);
        assert!(!serde_json::to_string(&p).unwrap().contains("s3cret-pw"));
        assert_eq!(p.options().unwrap_err().field, "--resume");
    }
}

//! Where a stack's spec comes from: exectl.yaml (`--config`, else ./exectl.yaml when present), the spec's
//! flags over it, and the images file over both. Read when a deploy begins; sweep reads it again at each
//! point, so an edit between points is seen.

use std::path::{Path, PathBuf};

use crate::shell::user_file::{read_named, WRITTEN};
use exectl_core::error::UsageError;
use exectl_core::spec::{self, Raw, SecretValue, SpecInput};

/// Saved (a sweep's plan) as `Saved`: every setting as text, every secret as its keyed fingerprint.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(into = "Saved", from = "Saved")]
pub struct SpecSource {
    /// exectl.yaml's path (must exist). None: ./exectl.yaml when present, else nothing.
    pub config: Option<PathBuf>,
    /// The settings given besides the file (flags, or a program's), which override it.
    pub flags: SpecInput,
    /// The images file (service → image reference), read over both.
    pub images: Option<PathBuf>,
    /// The folder of template overrides (`--templates`) the deploys render with.
    pub templates: Option<PathBuf>,
    /// No exectl.yaml at all, not even ./exectl.yaml (a campaign's rows: their file is their spec).
    pub no_config: bool,
}

/// A `SpecSource` as a file keeps it: the settings by their exectl.yaml key, `--set` pairs, image
/// overrides, and each `--set-secret` as `KEY=<secret sha256:…>` (never its value: read back, the
/// secrets are fingerprints, and must be given their values again before a deploy, as `--resume` does
/// from the stack's .env by `sweep_plan::resume`).
#[derive(serde::Serialize, serde::Deserialize)]
struct Saved {
    config: Option<PathBuf>,
    images: Option<PathBuf>,
    templates: Option<PathBuf>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    no_config: bool,
    settings: std::collections::BTreeMap<String, String>,
    env: Vec<String>,
    image_overrides: Vec<(String, String)>,
    secrets: Vec<String>,
}

impl From<SpecSource> for Saved {
    fn from(s: SpecSource) -> Saved {
        let mut flags = s.flags.clone();
        let settings = exectl_core::spec_settings::SETTINGS
            .iter()
            .filter_map(|set| {
                let value = (set.slot)(&mut flags).as_ref()?.value.clone();
                Some((set.key.to_string(), value))
            })
            .collect();
        Saved {
            config: s.config,
            images: s.images,
            templates: s.templates,
            no_config: s.no_config,
            settings,
            env: s.flags.env.iter().map(|r| r.value.clone()).collect(),
            image_overrides: s
                .flags
                .images
                .iter()
                .map(|(k, r)| (k.clone(), r.value.clone()))
                .collect(),
            secrets: s
                .flags
                .secret_env
                .iter()
                .map(|r| redacted(&r.value))
                .collect(),
        }
    }
}

impl From<Saved> for SpecSource {
    fn from(s: Saved) -> SpecSource {
        let mut flags = SpecInput::default();
        for (key, value) in s.settings {
            if let Some(set) = exectl_core::spec_settings::setting(&key) {
                *(set.slot)(&mut flags) = Some(Raw::flag(set.flag, value));
            }
        }
        flags.env = s.env.into_iter().map(|v| Raw::flag("--set", v)).collect();
        flags.images = s
            .image_overrides
            .into_iter()
            .map(|(k, v)| (k, Raw::flag("--images", v)))
            .collect();
        flags.secret_env = s
            .secrets
            .into_iter()
            .map(|v| Raw::flag("--set-secret", v))
            .collect();
        SpecSource {
            config: s.config,
            flags,
            images: s.images,
            templates: s.templates,
            no_config: s.no_config,
        }
    }
}

/// `KEY=VALUE` as `KEY=<secret sha256:…>`, the fingerprint the spec shows a secret by (keyed by its name).
pub fn redacted(pair: &str) -> String {
    match pair.split_once('=') {
        Some((k, v)) => format!("{k}={}", SecretValue::new(k, v).redacted()),
        None => "<redacted>".to_string(),
    }
}

impl SpecSource {
    /// The spec input as the files are now, not resolved (sweep sets its variable on it first).
    pub fn read(&self) -> Result<SpecInput, UsageError> {
        match self.no_config {
            true => self.over(SpecInput::default()),
            false => self.over(read_spec_file(self.config.as_deref())?),
        }
    }

    /// The flags and the images file over an exectl.yaml already read.
    pub fn over(&self, file: SpecInput) -> Result<SpecInput, UsageError> {
        let mut flags = self.flags.clone();
        if let Some(path) = &self.images {
            flags.images = read_images_file(path)?;
        }
        Ok(file.overridden_by(flags))
    }
}

/// Read exectl.yaml: the given path (must exist), else ./exectl.yaml if present, else nothing.
pub fn read_spec_file(explicit: Option<&Path>) -> Result<SpecInput, UsageError> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => {
            let p = PathBuf::from("exectl.yaml");
            if !p.exists() {
                return Ok(SpecInput::default());
            }
            p
        }
    };
    let text = read_named(
        &path,
        "--config",
        WRITTEN,
        "give the path of a readable exectl.yaml",
    )?;
    spec::parse_spec_file(&path, &text)
}

/// Read the images file of `--images FILE`.
fn read_images_file(path: &Path) -> Result<Vec<(String, spec::Raw)>, UsageError> {
    let text = read_named(
        path,
        "--images",
        WRITTEN,
        "give the path of a readable images file",
    )?;
    spec::parse_images_file(path, &text)
}

/// `--set-secret` values as `KEY=VALUE`: a bare `KEY` (no `=`) takes its value from `var(KEY)`, the
/// environment, as `docker run -e KEY` does, so that the value is not in exectl's command line, which
/// `ps` shows to every user of the machine (an environment only to its owner).
pub fn secret_pairs(
    given: &[String],
    var: impl Fn(&str) -> Option<String>,
) -> Result<Vec<String>, UsageError> {
    given
        .iter()
        .map(|g| match g.split_once('=') {
            Some(_) => Ok(g.clone()),
            // Never shown: a bare word may be a value given without its `KEY=`.
            None => var(g).map(|v| format!("{g}={v}")).ok_or_else(|| {
                UsageError::new(
                    "--set-secret",
                    "<redacted>",
                    "no =VALUE, and no environment variable of that name to take it from (the word given is not shown: it may be a value)",
                    "give --set-secret KEY=VALUE, or export KEY=... before exectl and give a bare --set-secret KEY (its value then stays out of `ps`)",
                )
            }),
        })
        .collect()
}

/// The target named by the flags, EXECTL_TARGET or ./exectl.yaml's `target:` (commands without a spec).
pub fn target_spec(
    args: &crate::sut::target_flags::TargetFlags,
) -> Result<crate::sut::TargetSpec, exectl_core::error::UsageError> {
    crate::state::checked_root()?;
    let file = read_spec_file(None)?;
    crate::sut::target_flags::resolve(args, file.target.as_ref())
}

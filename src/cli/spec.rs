//! The spec's flags, and the one reading of a spec: exectl.yaml, then the flags (one per setting of
//! `exectl_core::spec_settings`), then the images file, resolved and checked (exit 2 naming the field).

use crate::ops::spec_source::SpecSource;
use anyhow::Result;
use clap::{Arg, ArgAction, ArgMatches, Args, FromArgMatches};
use exectl_core::error::UsageError;
use exectl_core::render::Templates;
use exectl_core::spec::{self, Raw, Spec, SpecInput};
use exectl_core::spec_settings::{Kind as SettingKind, Setting, SETTINGS};
use std::path::PathBuf;

fn setting_arg(s: &Setting) -> Option<Arg> {
    let arg = Arg::new(s.key).help(s.help);
    let valued = |arg: Arg| {
        arg.value_name(
            s.value_name
                .map(String::from)
                .unwrap_or_else(|| s.key.to_uppercase()),
        )
        .action(ArgAction::Set)
        .value_parser(clap::value_parser!(String))
    };
    Some(match (s.kind, s.long()) {
        (SettingKind::Positional, _) => valued(arg),
        (SettingKind::Word, Some(long)) => valued(arg.long(long)),
        (SettingKind::Number, Some(long)) => valued(arg.long(long)).allow_hyphen_values(true),
        (SettingKind::Switch, Some(long)) => arg.long(long).action(ArgAction::SetTrue),
        _ => return None,
    })
}

/// The spec settings given as flags: one clap argument per row of `SETTINGS` (ids are the exectl.yaml
/// keys), read back as `Raw` values that name their flag.
#[derive(Debug, Clone, Default)]
pub struct SettingFlags(pub SpecInput);

impl Args for SettingFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        SETTINGS
            .iter()
            .filter_map(setting_arg)
            .fold(cmd, |cmd, arg| cmd.arg(arg))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for SettingFlags {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut input = SpecInput::default();
        for s in SETTINGS {
            let value = match s.kind {
                SettingKind::FileOnly => None,
                SettingKind::Switch => m.get_flag(s.key).then(|| "true".to_string()),
                _ => m.get_one::<String>(s.key).cloned(),
            };
            *(s.slot)(&mut input) = value.map(|v| Raw::flag(s.flag, v));
        }
        Ok(SettingFlags(input))
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

/// Everything that defines a stack. Flags override exectl.yaml.
#[derive(Debug, Args, Default, Clone)]
pub struct SpecArgs {
    /// Spec file (default: ./exectl.yaml when present).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The topology and one flag per spec setting (`core::spec_settings::SETTINGS`).
    #[command(flatten)]
    pub settings: SettingFlags,
    /// Any other app environment variable, e.g. --set DB_POOL_MAX=50 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", allow_hyphen_values = true)]
    pub set: Vec<String>,
    /// An app environment variable whose value is kept out of every record and output: it goes only to
    /// the stack's 0600 .env, e.g. --set-secret SMTP_PASSWORD=... (repeatable). A bare KEY takes the
    /// value from the environment variable KEY, out of the command line `ps` shows every user. Plain
    /// --set values are recorded in run records and exectl.lock.json.
    #[arg(
        long = "set-secret",
        value_name = "KEY[=VALUE]",
        allow_hyphen_values = true
    )]
    pub set_secret: Vec<String>,
    /// YAML file mapping app/mariadb/postgres/redis/nginx/traefik to image references.
    #[arg(long, value_name = "FILE")]
    pub images: Option<PathBuf>,
    /// Folder of template overrides (same relative names as the embedded ones, e.g. nginx/nginx.conf.tera).
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
}

impl SpecArgs {
    /// The flags as raw spec input (images file not read here; a bare `--set-secret KEY` read from
    /// the environment).
    pub fn to_input(&self) -> Result<SpecInput, UsageError> {
        Ok(SpecInput {
            env: self.set.iter().map(|s| Raw::flag("--set", s)).collect(),
            secret_env: secret_pairs(&self.set_secret, |k| std::env::var(k).ok())?
                .iter()
                .map(|s| Raw::flag("--set-secret", s))
                .collect(),
            ..self.settings.0.clone()
        })
    }
}

use crate::ops::spec_source::secret_pairs;
use crate::ops::templates::templates;

pub fn load_templates(args: &SpecArgs) -> Result<Templates> {
    templates(args.templates.as_deref())
}

pub use crate::ops::spec_source::read_spec_file;

/// The validated spec from an exectl.yaml already read, overridden by the flags and the images file.
pub fn spec_from(file: spec::SpecInput, args: &SpecArgs) -> Result<Spec> {
    Ok(spec::resolve(input_from(file, args)?)?)
}

/// An exectl.yaml already read, overridden by the flags and the images file: the input, not resolved.
pub fn input_from(file: spec::SpecInput, args: &SpecArgs) -> Result<spec::SpecInput, UsageError> {
    source(args)?.over(file)
}

/// The spec's flags as where the spec comes from.
pub fn source(args: &SpecArgs) -> Result<SpecSource, UsageError> {
    Ok(SpecSource {
        config: args.config.clone(),
        flags: args.to_input()?,
        images: args.images.clone(),
        templates: args.templates.clone(),
        no_config: false,
    })
}

/// exectl.yaml, then flags, then the images file: the validated spec.
pub fn load_spec(args: &SpecArgs) -> Result<Spec> {
    spec_from(read_spec_file(args.config.as_deref())?, args)
}

#[cfg(test)]
mod tests {
    use super::secret_pairs;

    #[test]
    fn a_bare_secret_key_reads_its_value_from_the_environment() {
        let env = |k: &str| (k == "SMTP_PASSWORD").then(|| "from-env".to_string());
        let given = ["SMTP_PASSWORD".to_string(), "TOKEN=t=1".to_string()];
        assert_eq!(
            secret_pairs(&given, env).unwrap(),
            ["SMTP_PASSWORD=from-env", "TOKEN=t=1"]
        );
        // No variable: refused naming the flag, with both ways to give it, never the word given (it
        // may be a value whose `KEY=` was forgotten).
        let e = secret_pairs(&["s3cretValue".to_string()], env).unwrap_err();
        let text = e.to_string();
        assert!(
            text.contains("--set-secret") && !text.contains("s3cret"),
            "{text}"
        );
        assert!(
            e.fix.contains("export KEY=") && e.fix.contains("KEY=VALUE"),
            "{e}"
        );
    }
}

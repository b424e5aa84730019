//! A fault during a level (`bench --fault`): what is done to the stack and when in the common hold, what
//! it became (when it ran, how long the engine took), and how it is told apart from an incident. The
//! users reconnect as the real client does (`load::recovery`); the level is judged on their return.
//! Pure: the text in, the plan and the words out; the shell's `bench::fault` runs it.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::UsageError;
use crate::load::recovery::Recovery;

/// What is done to the stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `docker restart` of one service's container ("app-1", "nginx", "redis", …).
    Restart(String),
    /// Every app instance restarted in turn, each once the one before runs again (a rolling restart).
    Roll,
    /// Every app instance replaced in turn by a new container with this change, each once the one
    /// before answers again (a rolling redeploy of a new version).
    Redeploy(Change),
}

/// What a redeploy changes in each app instance's definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// `image=REF`: the image it runs.
    Image(String),
    /// `KEY=VALUE`: one variable of its environment, set or replaced.
    Env(String, String),
}

impl Change {
    /// "image=REF" or "KEY=VALUE", a secret refused: its value would be written wherever the fault's
    /// text goes (results, the report), and a new secret would make the stack's others lie.
    fn parse(text: &str) -> Result<Change, String> {
        let (key, value) = text
            .split_once('=')
            .filter(|(k, v)| !k.is_empty() && !v.is_empty())
            .ok_or_else(|| format!("redeploy:{text} changes nothing: write {FORMS}"))?;
        if key == "image" {
            return Ok(Change::Image(value.to_string()));
        }
        let name_ok = key
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !name_ok {
            return Err(format!(
                "{key:?} is no environment variable's name (letters, digits and _): write {FORMS}"
            ));
        }
        let upper = key.to_ascii_uppercase();
        if crate::secrets::NAMES.contains(&key)
            || upper.contains("SECRET")
            || upper.contains("PASSWORD")
        {
            return Err(format!(
                "{key} is a secret: a fault's text goes into the results and the report; redeploy with another variable"
            ));
        }
        Ok(Change::Env(key.to_string(), value.to_string()))
    }

    /// "image=REF" / "KEY=VALUE".
    pub fn text(&self) -> String {
        match self {
            Change::Image(r) => format!("image={r}"),
            Change::Env(k, v) => format!("{k}={v}"),
        }
    }

    /// The environment of a container (its `KEY=VALUE` entries) with this change (an image change
    /// leaves it as it is).
    pub fn apply_env(&self, env: &mut Vec<String>) {
        if let Change::Env(key, value) = self {
            let entry = format!("{key}={value}");
            match env
                .iter_mut()
                .find(|e| e.split_once('=').is_some_and(|(k, _)| k == key))
            {
                Some(e) => *e = entry,
                None => env.push(entry),
            }
        }
    }
}

/// `--fault WHAT@WHEN`: the action, and how far into the level's common hold it starts. Saved (a
/// sweep's plan) as its text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Fault {
    pub action: Action,
    pub at: Duration,
}

impl TryFrom<String> for Fault {
    type Error = String;
    fn try_from(text: String) -> Result<Fault, String> {
        Fault::parse(&text)
    }
}

impl From<Fault> for String {
    fn from(f: Fault) -> String {
        f.text()
    }
}

/// How `--fault` is written, for its errors and help.
pub const FORMS: &str = "restart:SERVICE@WHEN (e.g. restart:app-1@10s, restart:nginx@5s), roll@WHEN (every app instance restarted in turn) or redeploy:KEY=VALUE@WHEN / redeploy:image=REF@WHEN (every app instance replaced in turn by a container with that variable or image), WHEN into the common hold";

impl Fault {
    /// "restart:app-1@10s", "roll@5s"; Err says what is wrong (the caller names the flag).
    pub fn parse(text: &str) -> Result<Fault, String> {
        let (what, when) = text
            .rsplit_once('@')
            .ok_or_else(|| format!("no @WHEN: write {FORMS}"))?;
        let at = crate::units::duration(when)
            .map_err(|e| format!("WHEN {when:?}: {}: write {FORMS}", e.problem))?;
        let action = match what.split_once(':') {
            Some(("restart", service)) if !service.is_empty() => {
                Action::Restart(service.to_string())
            }
            Some(("redeploy", change)) => Action::Redeploy(Change::parse(change)?),
            None if what == "roll" => Action::Roll,
            _ => return Err(format!("{what:?} is no fault: write {FORMS}")),
        };
        Ok(Fault { action, at })
    }

    /// The services it restarts, in order, among the stack's `services` (Err: one the stack does not
    /// run, or a roll of a stack without app instances).
    pub fn services(&self, services: &[String]) -> Result<Vec<String>, String> {
        match &self.action {
            Action::Restart(s) if services.contains(s) => Ok(vec![s.clone()]),
            Action::Restart(s) => Err(format!(
                "the stack runs no service {s} (it runs {})",
                services.join(", ")
            )),
            Action::Roll | Action::Redeploy(_) => {
                let apps: Vec<String> = services
                    .iter()
                    .filter(|s| crate::status::is_app(s))
                    .cloned()
                    .collect();
                match apps.is_empty() {
                    true => Err("the stack runs no app instance to roll".into()),
                    false => Ok(apps),
                }
            }
        }
    }

    /// The services it acts on among those a stack runs (`services` of `stack`: from its spec before
    /// anything connects — a sweep's every point, a campaign's every row — or as deployed, for a
    /// bench). A service it lacks would otherwise be found after a deploy and a seed. The error names
    /// the service, those there are, and a fault that would do.
    pub fn check_services(
        &self,
        stack: &str,
        services: &[String],
    ) -> Result<Vec<String>, UsageError> {
        let at = crate::units::show(self.at);
        let example = services
            .iter()
            .find(|s| crate::status::is_app(s))
            .or(services.first())
            .map_or("app", String::as_str);
        let fix = match &self.action {
            Action::Restart(_) => {
                format!("name one of its services, e.g. --fault restart:{example}@{at}")
            }
            _ => format!("give restart:SERVICE@{at} of one of its services"),
        };
        self.services(services).map_err(|why| {
            UsageError::new(
                "--fault",
                self.text(),
                why.replacen("the stack", &format!("the stack {stack}"), 1),
                fix,
            )
        })
    }

    /// Checked against a level's hold: it must start inside it.
    pub fn check_hold(&self, hold: Duration) -> Result<(), String> {
        match self.at < hold {
            true => Ok(()),
            false => Err(format!(
                "it starts {} into a hold of {}: nothing would run after it",
                crate::units::show(self.at),
                crate::units::show(hold)
            )),
        }
    }

    /// "restart app-1 10 s into the hold".
    pub fn describe(&self) -> String {
        let what = match &self.action {
            Action::Restart(s) => format!("restart {s}"),
            Action::Roll => "restart every app instance in turn".into(),
            Action::Redeploy(c) => format!("redeploy every app instance in turn with {}", c.text()),
        };
        format!("{what} {} into the hold", crate::units::show(self.at))
    }

    /// The flag's text, as parsed ("restart:app-1@10s").
    pub fn text(&self) -> String {
        let what = match &self.action {
            Action::Restart(s) => format!("restart:{s}"),
            Action::Roll => "roll".into(),
            Action::Redeploy(c) => format!("redeploy:{}", c.text()),
        };
        format!("{what}@{}", crate::units::show(self.at))
    }
}

/// What a level's planned fault became, and what the users' reconnects came to.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FaultFigures {
    /// The flag's text ("restart:app-1@10s").
    pub planned: String,
    /// The services restarted, in order.
    pub services: Vec<String>,
    /// When the engine was asked, seconds into the common hold (None: it did not run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_s: Option<f64>,
    /// How long until the engine said it was done (a roll: the last instance running again).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub took_s: Option<f64>,
    /// Why it did not run, or not whole (the hold ended first, the engine refused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The users' drops and returns over the level.
    pub recovery: Recovery,
    /// collab/editing: frames owed to a room-mate open all along that never reached it (None: a
    /// scenario without frames).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updates_lost: Option<u64>,
}

impl FaultFigures {
    /// "app-1 restarted 10.0 s into the hold (the engine took 1.2 s): 20 sockets dropped …, all back
    /// within 3.1 s …", or why it did not run.
    pub fn describe(&self) -> String {
        let (verb, with) = match Fault::parse(&self.planned).map(|f| f.action) {
            Ok(Action::Redeploy(c)) => ("redeployed", format!(" with {}", c.text())),
            _ => ("restarted", String::new()),
        };
        let what = match self.services.len() {
            1 => format!("{} {verb}{with}", self.services[0]),
            _ => format!("{} {verb} in turn{with}", self.services.join(", ")),
        };
        match (self.at_s, &self.error) {
            (Some(at), None) => format!(
                "{what} {at:.1} s into the hold{}: {}{}",
                self.took_s
                    .map(|t| format!(" (the engine took {t:.1} s)"))
                    .unwrap_or_default(),
                self.recovery.describe(),
                self.updates_lost
                    .map(|n| format!("; {n} updates lost"))
                    .unwrap_or_default()
            ),
            (_, Some(why)) => format!(
                "the fault {} did not run whole: {why}; {}",
                self.planned,
                self.recovery.describe()
            ),
            (None, None) => format!("the fault {} did not run", self.planned),
        }
    }

    /// The level cannot count when its fault did not run whole: it measured something else.
    pub fn invalid(&self) -> Option<String> {
        (self.error.is_some() || self.at_s.is_none()).then(|| self.describe())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn services() -> Vec<String> {
        ["db", "redis", "app-1", "app-2", "nginx"]
            .map(String::from)
            .into()
    }

    #[test]
    fn a_fault_is_parsed_checked_against_the_stack_and_said_back() {
        let f = Fault::parse("restart:app-1@10s").unwrap();
        assert_eq!(f.action, Action::Restart("app-1".into()));
        assert_eq!(f.at, Duration::from_secs(10));
        assert_eq!(f.services(&services()).unwrap(), ["app-1"]);
        assert_eq!(f.text(), "restart:app-1@10s");
        assert_eq!(f.describe(), "restart app-1 10s into the hold");
        assert!(f.check_hold(Duration::from_secs(30)).is_ok());
        let e = f.check_hold(Duration::from_secs(10)).unwrap_err();
        assert!(e.contains("into a hold of 10s"), "{e}");

        let roll = Fault::parse("roll@500ms").unwrap();
        assert_eq!(roll.services(&services()).unwrap(), ["app-1", "app-2"]);
        assert_eq!(roll.text(), "roll@500ms");

        let e = Fault::parse("restart:app-9@1s")
            .unwrap()
            .services(&services())
            .unwrap_err();
        assert!(e.contains("no service app-9"), "{e}");
        let only_db = vec!["db".to_string()];
        assert!(roll.services(&only_db).is_err());
        for bad in [
            "restart:app-1",
            "restart:@1s",
            "kill:app-1@1s",
            "roll@soon",
            "@1s",
        ] {
            let e = Fault::parse(bad).unwrap_err();
            assert!(e.contains("restart:SERVICE@WHEN"), "{bad}: {e}");
        }
    }

    /// Issue #50, item 12: a single stack's only app is `app`; restart:app-1 passed `--plan` and failed
    /// after a deploy and a seed. The services are the rendered compose file's, known before anything
    /// connects.
    #[test]
    fn a_fault_on_a_service_the_spec_does_not_run_is_refused_naming_those_it_does() {
        use crate::spec::{ha_input, resolve, Raw, SpecInput};
        let single = resolve(SpecInput {
            topology: Some(Raw::flag("topology", "single")),
            ..Default::default()
        })
        .unwrap();
        let embedded = crate::render::Templates::embedded();
        let names = crate::pipeline::service_names(&single, &embedded).unwrap();
        assert_eq!(names, ["app", "mariadb", "traefik"]);
        let e = Fault::parse("restart:app-1@2s")
            .unwrap()
            .check_services("q-single", &names)
            .unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.value.as_str()),
            ("--fault", "restart:app-1@2s")
        );
        assert_eq!(
            e.problem,
            "the stack q-single runs no service app-1 (it runs app, mariadb, traefik)"
        );
        assert!(e.fix.contains("e.g. --fault restart:app@2s"), "{e}");
        Fault::parse("restart:app@2s")
            .unwrap()
            .check_services("q-single", &names)
            .unwrap();
        let ha = resolve(ha_input(&[("--instances", "3")])).unwrap();
        let names = crate::pipeline::service_names(&ha, &embedded).unwrap();
        for ok in ["restart:app-3@1s", "restart:nginx@1s", "roll@1s"] {
            let f = Fault::parse(ok).unwrap();
            f.check_services("q-ha", &names).unwrap();
        }
        let e = Fault::parse("restart:app-4@1s")
            .unwrap()
            .check_services("q-ha", &names)
            .unwrap_err();
        assert!(e.problem.contains("app-1, app-2, app-3"), "{e}");
    }

    #[test]
    fn a_redeploy_changes_one_variable_or_the_image_of_every_instance_never_a_secret() {
        let f = Fault::parse("redeploy:LOG_LEVEL=debug@5s").unwrap();
        let change = Change::Env("LOG_LEVEL".into(), "debug".into());
        assert_eq!(f.action, Action::Redeploy(change.clone()));
        assert_eq!(f.services(&services()).unwrap(), ["app-1", "app-2"]);
        assert_eq!(f.text(), "redeploy:LOG_LEVEL=debug@5s");
        assert_eq!(
            f.describe(),
            "redeploy every app instance in turn with LOG_LEVEL=debug 5s into the hold"
        );
        // Set when absent, replaced when present; the others kept in their order.
        let mut env = vec!["A=1".to_string(), "LOG_LEVEL=info".into()];
        change.apply_env(&mut env);
        assert_eq!(env, ["A=1", "LOG_LEVEL=debug"]);
        let mut env = vec!["LOG_LEVEL_X=1".to_string()];
        change.apply_env(&mut env);
        assert_eq!(env, ["LOG_LEVEL_X=1", "LOG_LEVEL=debug"]);
        let image = Fault::parse("redeploy:image=exelearning:next@1s").unwrap();
        assert_eq!(
            image.action,
            Action::Redeploy(Change::Image("exelearning:next".into()))
        );
        let mut env = vec!["A=1".to_string()];
        Change::Image("x".into()).apply_env(&mut env);
        assert_eq!(env, ["A=1"]);
        for (bad, says) in [
            ("redeploy:API_JWT_SECRET=x@1s", "is a secret"),
            ("redeploy:MY_DB_PASSWORD=x@1s", "is a secret"),
            ("redeploy:LOG_LEVEL@1s", "changes nothing"),
            ("redeploy:LOG_LEVEL=@1s", "changes nothing"),
            ("redeploy:1X=y@1s", "no environment variable"),
        ] {
            let e = Fault::parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        let ran = FaultFigures {
            planned: f.text(),
            services: vec!["app-1".into(), "app-2".into()],
            at_s: Some(5.0),
            ..FaultFigures::default()
        };
        assert!(ran.describe().starts_with(
            "app-1, app-2 redeployed in turn with LOG_LEVEL=debug 5.0 s into the hold"
        ));
    }

    #[test]
    fn a_fault_that_did_not_run_makes_the_level_invalid() {
        let ran = FaultFigures {
            planned: "restart:app-1@2s".into(),
            services: vec!["app-1".into()],
            at_s: Some(2.0),
            took_s: Some(0.6),
            ..FaultFigures::default()
        };
        assert_eq!(ran.invalid(), None);
        let collab = FaultFigures {
            updates_lost: Some(0),
            ..ran.clone()
        };
        assert!(collab
            .describe()
            .ends_with("no socket dropped; 0 updates lost"));
        assert!(ran.describe().starts_with(
            "app-1 restarted 2.0 s into the hold (the engine took 0.6 s): no socket dropped"
        ));
        let refused = FaultFigures {
            error: Some("the engine refused: no such container".into()),
            ..ran.clone()
        };
        assert!(refused.invalid().unwrap().contains("did not run whole"));
        let late = FaultFigures { at_s: None, ..ran };
        assert!(late.invalid().is_some());
    }
}

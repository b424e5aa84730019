//! The load's scenarios, as `exectl load` names them: one list for the load, the objectives, sweep
//! variables and the bench settings.

use std::fmt;
use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    Idle,
    LoginBurst,
    Collab,
    Editing,
}

impl Scenario {
    pub const ALL: [Scenario; 4] = [
        Scenario::Idle,
        Scenario::LoginBurst,
        Scenario::Collab,
        Scenario::Editing,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scenario::Idle => "idle",
            Scenario::LoginBurst => "login-burst",
            Scenario::Collab => "collab",
            Scenario::Editing => "editing",
        }
    }

    pub fn parse(s: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|x| x.name() == s)
    }

    /// Whether users open a WebSocket (all but login-burst).
    pub fn uses_socket(self) -> bool {
        self != Scenario::LoginBurst
    }

    /// The action interval D (waits uniform in [D/2, 2·D]): collab sends often, editing at the seed's
    /// 5–20 s.
    pub fn default_interval(self) -> Duration {
        match self {
            Scenario::Editing => Duration::from_secs(10),
            _ => Duration::from_secs(1),
        }
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Every scenario's name, in `Scenario::ALL`'s order (a test holds the two together).
pub const NAMES: [&str; 4] = ["idle", "login-burst", "collab", "editing"];

impl Scenario {
    /// Every scenario's name, in order.
    pub fn names() -> [&'static str; 4] {
        NAMES
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_scenarios_in_order() {
        assert_eq!(Scenario::ALL.map(Scenario::name), NAMES);
        for s in Scenario::ALL {
            assert_eq!(Scenario::parse(s.name()), Some(s));
        }
    }
}

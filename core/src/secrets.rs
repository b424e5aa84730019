//! The stack's secrets as values: their names, generated once (random), read back from the env-file
//! form they are stored in. Pure; where they are kept is `crate::secrets`.

use rand::RngCore;
use std::collections::BTreeMap;

/// The names, in the order .env lists them.
pub const NAMES: [&str; 5] = [
    "APP_SECRET",
    "API_JWT_SECRET",
    "DB_PASSWORD",
    "DB_ROOT_PASSWORD",
    "ADMIN_PASSWORD",
];

#[derive(Clone, PartialEq, Eq)]
pub struct Secrets(BTreeMap<String, String>);

// Debug must not leak values into logs or panics.
impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secrets({:?})", self.0.keys().collect::<Vec<_>>())
    }
}

impl Secrets {
    pub fn generate() -> Secrets {
        let mut rng = rand::rngs::OsRng;
        Secrets(
            NAMES
                .iter()
                .map(|n| {
                    let mut b = [0u8; 24];
                    rng.fill_bytes(&mut b);
                    (n.to_string(), hex::encode(b))
                })
                .collect(),
        )
    }

    pub fn get(&self, name: &str) -> &str {
        self.0.get(name).map(String::as_str).unwrap_or("")
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        NAMES.iter().map(move |n| (*n, self.get(n)))
    }

    /// Parse KEY=VALUE lines; missing names are filled in by `complete`.
    pub fn parse(text: &str) -> Secrets {
        Secrets(
            text.lines()
                .filter_map(|l| l.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .collect(),
        )
    }

    /// Add any secret a newer exectl needs that an older state file lacks. Returns true if one was added.
    pub fn complete(&mut self) -> bool {
        let fresh = Secrets::generate();
        let mut added = false;
        for n in NAMES {
            if self.get(n).is_empty() {
                self.0.insert(n.to_string(), fresh.get(n).to_string());
                added = true;
            }
        }
        added
    }

    pub fn to_env_text(&self) -> String {
        self.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
    }
}

//! The app's error answers during a run (its known 5xx, contract §8), counted per endpoint and status
//! with how many left their row behind to adopt, and what exectl did about them.

use reqwest::StatusCode;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// The creating endpoints whose 5xx answers are counted and looked behind.
pub const CREATE_USER: &str = "POST /api/v1/users";
pub const CREATE_PROJECT: &str = "POST /api/v1/projects";
pub const CREATE_QUICK: &str = "POST /api/project/create-quick";

/// Error answers of one kind the app gave during a run, and what became of them.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct AppError {
    /// `METHOD path`, e.g. `POST /api/v1/users`.
    pub endpoint: String,
    pub status: u16,
    /// How many such answers the run saw.
    pub count: u64,
    /// Of those, how many left their row behind, found and adopted.
    pub adopted: u64,
    /// What exectl did about them.
    pub action: String,
}

/// What exectl does after a 5xx of `endpoint`.
fn action(endpoint: &str) -> &'static str {
    match endpoint {
        CREATE_USER => {
            "looked for the account (a login with the run's password): there = adopted, else the run fails"
        }
        CREATE_PROJECT => {
            "looked for the row (the owner's project of the planned title, under a uuid the app chose): there = adopted, else the run fails; later creates went to POST /api/project/create-quick"
        }
        _ => "looked for the row (the owner's project of the planned title): there = adopted, else the run fails",
    }
}

/// The 5xx answers of a run, per endpoint and status (shared by the requests in flight).
#[derive(Debug, Default)]
pub struct Tally(Mutex<BTreeMap<(&'static str, u16), Seen>>);

/// Answers of one endpoint and status: (seen, adopted).
type Seen = (u64, u64);

impl Tally {
    /// One error answer of `endpoint`.
    pub fn seen(&self, endpoint: &'static str, status: StatusCode) {
        self.count(endpoint, status, |s| s.0 += 1);
    }

    /// Its row was found after all and adopted.
    pub fn adopted(&self, endpoint: &'static str, status: StatusCode) {
        self.count(endpoint, status, |s| s.1 += 1);
    }

    fn count(&self, endpoint: &'static str, status: StatusCode, add: impl FnOnce(&mut Seen)) {
        add(self
            .0
            .lock()
            .unwrap()
            .entry((endpoint, status.as_u16()))
            .or_default());
    }

    pub fn report(&self) -> Vec<AppError> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(&(endpoint, status), &(count, adopted))| AppError {
                endpoint: endpoint.to_string(),
                status,
                count,
                adopted,
                action: action(endpoint).to_string(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn app_errors_are_counted_per_endpoint_and_status() {
        let t = Tally::default();
        assert!(t.report().is_empty());
        let e500 = StatusCode::INTERNAL_SERVER_ERROR;
        for _ in 0..3 {
            t.seen(CREATE_USER, e500);
            t.adopted(CREATE_USER, e500);
        }
        t.seen(CREATE_USER, StatusCode::BAD_GATEWAY);
        t.seen(CREATE_PROJECT, e500);
        t.adopted(CREATE_PROJECT, e500);
        let r = t.report();
        let rows: Vec<_> = r
            .iter()
            .map(|e| (e.endpoint.as_str(), e.status, e.count, e.adopted))
            .collect();
        assert_eq!(
            rows,
            [
                (CREATE_PROJECT, 500, 1, 1),
                (CREATE_USER, 500, 3, 3),
                (CREATE_USER, 502, 1, 0)
            ]
        );
        assert!(r[0].action.contains("create-quick"), "{}", r[0].action);
        let j = serde_json::to_value(&r[1]).unwrap();
        assert_eq!(j["endpoint"], "POST /api/v1/users");
        assert_eq!(j["count"], 3);
    }
}

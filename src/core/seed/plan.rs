//! What prepare seeds, as data: N accounts from an email pattern, M projects, K members per project
//! (the owner plus K-1 collaborators). Pure and deterministic: the same input gives the same emails and
//! project uuids, so a re-run adds nothing and a larger N adds only the difference.

use crate::error::UsageError;
use serde::Serialize;

/// Written into `users.external_identifier` of every account prepare makes, so that `--reset` removes
/// only those (together with the email pattern).
pub const MARKER: &str = "exectl-prepare";
pub const DEFAULT_PATTERN: &str = "bench-user-{i}@exelearning.net";
/// The seed's default password (upstream prepare.sh).
pub const DEFAULT_PASSWORD: &str = "Bench1234!";
/// The app's users.email is varchar(180).
const EMAIL_MAX: usize = 180;
/// uuid v5 namespace of prepare's projects (a fixed random uuid).
const PROJECT_NS: uuid::Uuid = uuid::Uuid::from_u128(0x6a0d_3c5e_52e1_4f0b_9a57_3f1e_8c0b_d2a4);

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Visibility {
    Private,
    Public,
}

impl Visibility {
    pub fn parse(v: &str) -> Result<Visibility, UsageError> {
        match v {
            "private" => Ok(Visibility::Private),
            "public" => Ok(Visibility::Public),
            _ => Err(UsageError::new(
                "--visibility",
                v,
                "unknown visibility",
                "use private or public",
            )),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Visibility::Private => "private",
            Visibility::Public => "public",
        }
    }
}

/// An account's part in its project: the manifest's `role`.
pub use crate::core::manifest::Role;

/// `bench-user-{i}@exelearning.net`: the text around the one `{i}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmailPattern {
    pub prefix: String,
    pub suffix: String,
}

impl EmailPattern {
    pub fn parse(p: &str) -> Result<EmailPattern, UsageError> {
        let bad = |problem: &str| {
            UsageError::new(
                "--email-pattern",
                p,
                problem,
                "give an email with one {i} for the account number, e.g. bench-user-{i}@exelearning.net",
            )
        };
        if p.matches("{i}").count() != 1 {
            return Err(bad("needs exactly one {i}"));
        }
        let (prefix, suffix) = p.split_once("{i}").expect("one {i}");
        let pat = EmailPattern {
            prefix: prefix.to_string(),
            suffix: suffix.to_string(),
        };
        // Characters SQL, LIKE or the manifest's CSV would need to escape are refused outright.
        if p.chars()
            .any(|c| "'\"\\,%!`".contains(c) || c.is_whitespace())
        {
            return Err(bad("contains a quote, backslash, comma, %, ! or space"));
        }
        if !is_email(&pat.email(0)) {
            return Err(bad("does not give a valid email address"));
        }
        Ok(pat)
    }

    /// The pattern as given: `prefix{i}suffix`.
    pub fn text(&self) -> String {
        format!("{}{{i}}{}", self.prefix, self.suffix)
    }

    pub fn email(&self, i: u64) -> String {
        format!("{}{i}{}", self.prefix, self.suffix)
    }

    /// A LIKE pattern (escape character `!`) matching every email of the pattern.
    pub fn like(&self) -> String {
        let esc = |s: &str| s.replace('_', "!_");
        format!("{}%{}", esc(&self.prefix), esc(&self.suffix))
    }

    pub fn check_length(&self, accounts: u64) -> Result<(), UsageError> {
        let longest = self.email(accounts.saturating_sub(1));
        if longest.len() > EMAIL_MAX {
            return Err(UsageError::new(
                "--email-pattern",
                format!("{}{{i}}{}", self.prefix, self.suffix),
                format!("gives emails of {} characters", longest.len()),
                format!("keep emails within the app's {EMAIL_MAX} characters"),
            ));
        }
        Ok(())
    }
}

/// TypeBox's `format: 'email'` as the app's login checks it: a local part of atext and dots, then a
/// dotted domain of hostname labels.
pub fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.split_once('@') else {
        return false;
    };
    let atext = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+/=?^_`{|}~-".contains(c);
    let local_ok = !local.is_empty()
        && local
            .split('.')
            .all(|p| !p.is_empty() && p.chars().all(atext));
    let labels: Vec<&str> = domain.split('.').collect();
    let label_ok = |l: &&str| {
        !l.is_empty()
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
    };
    local_ok && labels.len() >= 2 && labels.iter().all(label_ok)
}

/// How many accounts, projects and members per project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Shape {
    pub accounts: u64,
    pub projects: u64,
    pub users_per_project: u64,
}

/// From the flags: M defaults to ceil(N / K), K to N / M (at least 1). Every account must be a member of
/// a project (M × K ≥ N) and a project's members must be distinct accounts (K ≤ N).
pub fn shape(accounts: u64, projects: Option<u64>, k: Option<u64>) -> Result<Shape, UsageError> {
    if accounts == 0 {
        return Err(UsageError::new(
            "--accounts",
            0,
            "no accounts to make",
            "pass --accounts 1 or more",
        ));
    }
    if k == Some(0) {
        return Err(UsageError::new(
            "--users-per-project",
            0,
            "a project has at least its owner",
            "pass --users-per-project 1 or more",
        ));
    }
    if projects == Some(0) {
        return Err(UsageError::new(
            "--projects",
            0,
            "every account needs a project to join",
            "pass --projects 1 or more",
        ));
    }
    let (projects, k) = match (projects, k) {
        (Some(m), Some(k)) => (m, k),
        (Some(m), None) => (m, (accounts / m).max(1)),
        (None, Some(k)) => (accounts.div_ceil(k), k),
        (None, None) => (accounts, 1),
    };
    if k > accounts {
        return Err(UsageError::new(
            "--users-per-project",
            k,
            format!("more members per project than the {accounts} accounts"),
            format!("pass --users-per-project {accounts} or fewer, or more --accounts"),
        ));
    }
    if projects.saturating_mul(k) < accounts {
        return Err(UsageError::new(
            "--projects",
            projects,
            format!(
                "{projects} projects x {k} users cover only {} of the {accounts} accounts",
                projects * k
            ),
            format!(
                "pass --projects {} or more, or --users-per-project {}",
                accounts.div_ceil(k),
                accounts.div_ceil(projects)
            ),
        ));
    }
    Ok(Shape {
        accounts,
        projects,
        users_per_project: k,
    })
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedAccount {
    pub email: String,
    /// The project this account's manifest entry names (its first membership).
    pub project: usize,
    pub role: Role,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedProject {
    pub uuid: String,
    pub title: String,
    /// Account index of the owner.
    pub owner: usize,
    /// Account indexes of the collaborators (distinct, never the owner).
    pub collaborators: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub shape: Shape,
    pub visibility: Visibility,
    pub pattern: EmailPattern,
    pub accounts: Vec<PlannedAccount>,
    pub projects: Vec<PlannedProject>,
}

impl Plan {
    pub fn collaborator_rows(&self) -> impl Iterator<Item = (&PlannedProject, usize)> {
        self.projects
            .iter()
            .flat_map(|p| p.collaborators.iter().map(move |&c| (p, c)))
    }

    pub fn collaborator_count(&self) -> usize {
        self.projects.iter().map(|p| p.collaborators.len()).sum()
    }
}

/// Project p's members are accounts (p·K + j) mod N for j in 0..K; the first is its owner. Account i's
/// manifest entry is project i / K (owner when i mod K = 0). A project's uuid is the uuid v5 of its
/// owner's email and its number: stable across runs.
pub fn plan(shape: Shape, pattern: &EmailPattern, visibility: Visibility) -> Plan {
    let n = shape.accounts as usize;
    let k = shape.users_per_project as usize;
    let accounts = (0..n)
        .map(|i| PlannedAccount {
            email: pattern.email(i as u64),
            project: i / k,
            role: if i % k == 0 {
                Role::Owner
            } else {
                Role::Collaborator
            },
        })
        .collect::<Vec<_>>();
    let projects = (0..shape.projects as usize)
        .map(|p| {
            let owner = (p * k) % n;
            let name = format!("{}#{p}", accounts[owner].email);
            PlannedProject {
                uuid: uuid::Uuid::new_v5(&PROJECT_NS, name.as_bytes())
                    .hyphenated()
                    .to_string(),
                title: format!("bench-project-{p}"),
                owner,
                collaborators: (1..k).map(|j| (p * k + j) % n).collect(),
            }
        })
        .collect();
    Plan {
        shape,
        visibility,
        pattern: pattern.clone(),
        accounts,
        projects,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pat() -> EmailPattern {
        EmailPattern::parse(DEFAULT_PATTERN).unwrap()
    }

    #[test]
    fn shapes_and_defaults() {
        let s = |n, m, k| shape(n, m, k).map(|s| (s.projects, s.users_per_project));
        assert_eq!(s(1000, Some(250), Some(4)), Ok((250, 4)));
        assert_eq!(s(1000, Some(250), None), Ok((250, 4)));
        assert_eq!(s(1000, None, Some(4)), Ok((250, 4)));
        assert_eq!(s(10, None, Some(4)), Ok((3, 4)));
        assert_eq!(s(10000, Some(10000), None), Ok((10000, 1)));
        assert_eq!(s(5, None, None), Ok((5, 1)));
        for (n, m, k, field) in [
            (0, None, None, "--accounts"),
            (10, None, Some(0), "--users-per-project"),
            (10, Some(0), None, "--projects"),
            (3, None, Some(4), "--users-per-project"),
            (10, Some(2), Some(3), "--projects"),
        ] {
            let e = shape(n, m, k).unwrap_err();
            assert_eq!(e.field, field, "{e}");
        }
    }

    #[test]
    fn members_owner_first_and_stable_uuids() {
        let p = plan(
            shape(8, Some(2), Some(4)).unwrap(),
            &pat(),
            Visibility::Private,
        );
        assert_eq!(p.projects[0].owner, 0);
        assert_eq!(p.projects[0].collaborators, vec![1, 2, 3]);
        assert_eq!(p.projects[1].owner, 4);
        assert_eq!(p.accounts[5].project, 1);
        assert_eq!(p.accounts[5].role, Role::Collaborator);
        assert_eq!(p.accounts[4].role, Role::Owner);
        assert_eq!(p.accounts[0].email, "bench-user-0@exelearning.net");
        assert_eq!(p.collaborator_count(), 6);
        let again = plan(
            shape(16, Some(4), Some(4)).unwrap(),
            &pat(),
            Visibility::Private,
        );
        assert_eq!(
            again.projects[..2],
            p.projects[..],
            "a larger N keeps the first ones"
        );
        let u = &p.projects[0].uuid;
        assert_eq!(u.len(), 36);
        assert_eq!(u, &u.to_lowercase());
        assert_eq!(&u[14..15], "5", "uuid v5");
    }

    #[test]
    fn wrap_around_keeps_members_distinct() {
        let p = plan(
            shape(5, Some(3), Some(3)).unwrap(),
            &pat(),
            Visibility::Public,
        );
        assert_eq!(p.projects[2].owner, 1);
        assert_eq!(p.projects[2].collaborators, vec![2, 3]);
        assert_eq!(p.projects[1].collaborators, vec![4, 0]);
    }

    #[test]
    fn patterns() {
        assert_eq!(pat().like(), "bench-user-%@exelearning.net");
        assert_eq!(pat().text(), DEFAULT_PATTERN);
        let p = EmailPattern::parse("load_{i}@x.org").unwrap();
        assert_eq!(p.like(), "load!_%@x.org");
        for bad in [
            "no-index@x.org",
            "{i}-{i}@x.org",
            "a'{i}@x.org",
            "{i}",
            "a {i}@x.org",
            "a{i}@localhost",
        ] {
            assert_eq!(
                EmailPattern::parse(bad).unwrap_err().field,
                "--email-pattern"
            );
        }
        let long = EmailPattern::parse(&format!("{}{{i}}@x.org", "a".repeat(170))).unwrap();
        assert!(long.check_length(10).is_ok());
        assert!(long.check_length(100_000).is_err());
    }
}

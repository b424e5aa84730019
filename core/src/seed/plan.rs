//! What prepare seeds, as data: N accounts from an email pattern and M projects, account a a member
//! of project a mod M (the smallest such a its owner, the others collaborators). Pure and deterministic: the same input gives the same emails and
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

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
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
pub use crate::manifest::Role;

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

    /// The accounts of a room-size sweep's value `k` (`users_per_project`): this pattern with `r{k}.`
    /// after the `@` (`bench-user-{i}@r10.exelearning.net`), a manifest of their own whose emails
    /// neither this pattern's LIKE nor another room's matches (the domain differs right after the `@`).
    pub fn for_room(&self, k: u64) -> Result<EmailPattern, UsageError> {
        match self.suffix.split_once('@') {
            Some((local, domain)) => {
                EmailPattern::parse(&format!("{}{{i}}{local}@r{k}.{domain}", self.prefix))
            }
            None => Err(UsageError::new(
                "--email-pattern",
                self.text(),
                "a room-size sweep seeds each room size under its own domain, after the {i}'s @",
                "put {i} before the @, e.g. bench-user-{i}@exelearning.net",
            )),
        }
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
    /// The most members a project has (⌈N / M⌉); every project has exactly K when M divides N.
    pub users_per_project: u64,
}

/// From the flags. The layout (see `plan`) puts account a in project a mod M, so a project has ⌈N/M⌉
/// or ⌊N/M⌋ members; K is the largest, ⌈N/M⌉. M defaults to ⌈N / K⌉ (with neither flag: M = N, K = 1).
/// Given both, they must agree (K = ⌈N/M⌉); M ≤ N, since every project needs an owner of its own.
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
    if let Some(k) = k.filter(|&k| k > accounts) {
        return Err(UsageError::new(
            "--users-per-project",
            k,
            format!("more members per project than the {accounts} accounts"),
            format!("pass --users-per-project {accounts} or fewer, or more --accounts"),
        ));
    }
    let both = projects.is_some() && k.is_some();
    let projects = match (projects, k) {
        (Some(m), _) => m,
        (None, Some(k)) => accounts.div_ceil(k),
        (None, None) => accounts,
    };
    if projects > accounts {
        return Err(UsageError::new(
            "--projects",
            projects,
            format!("more projects than the {accounts} accounts: each project needs an owner of its own"),
            format!("pass --projects {accounts} or fewer, or more --accounts"),
        ));
    }
    let most = accounts.div_ceil(projects);
    match k {
        Some(k) if projects.saturating_mul(k) < accounts => {
            return Err(UsageError::new(
                "--projects",
                projects,
                format!(
                    "{projects} projects x {k} users cover only {} of the {accounts} accounts",
                    projects * k
                ),
                format!(
                    "pass --projects {} or more, or --users-per-project {most}",
                    accounts.div_ceil(k),
                ),
            ))
        }
        Some(k) if both && k != most => {
            return Err(UsageError::new(
                "--users-per-project",
                k,
                format!(
                    "account a joins project a mod {projects}: {accounts} accounts in {projects} projects give at most {most} per project"
                ),
                format!(
                    "pass --users-per-project {most}, or --projects {} (or give only one of the two)",
                    accounts.div_ceil(k)
                ),
            ))
        }
        _ => {}
    }
    Ok(Shape {
        accounts,
        projects,
        users_per_project: most,
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

    /// The order of the manifest's accounts: project by project, owner first (accounts 0, M, 2M, …,
    /// then 1, 1 + M, …). `load --users U` takes the manifest's first U entries, so its rooms fill to K
    /// members as they did when members were consecutive accounts, rather than U rooms of one.
    pub fn manifest_order(&self) -> impl Iterator<Item = usize> + '_ {
        self.projects
            .iter()
            .flat_map(|p| std::iter::once(p.owner).chain(p.collaborators.iter().copied()))
    }
}

/// The layout: account a is a member of project a mod M, project P's owner is account P (the smallest
/// such a) and its collaborators are P + M, P + 2M, … below N. This is what upstream's k6 scripts
/// assume with one user per project (virtual user i logs in as account i mod N and opens project
/// i mod M: the same project for every i < N, and for every i when M divides N), and what exectl's own
/// scenarios read from the manifest. A project's uuid is the uuid v5 of its owner's email and its
/// number: stable across runs.
pub fn plan(shape: Shape, pattern: &EmailPattern, visibility: Visibility) -> Plan {
    let n = shape.accounts as usize;
    let m = shape.projects as usize;
    let accounts = (0..n)
        .map(|a| PlannedAccount {
            email: pattern.email(a as u64),
            project: a % m,
            role: if a < m {
                Role::Owner
            } else {
                Role::Collaborator
            },
        })
        .collect::<Vec<_>>();
    let projects = (0..m)
        .map(|p| {
            let name = format!("{}#{p}", accounts[p].email);
            PlannedProject {
                uuid: uuid::Uuid::new_v5(&PROJECT_NS, name.as_bytes())
                    .hyphenated()
                    .to_string(),
                title: format!("bench-project-{p}"),
                owner: p,
                collaborators: (p + m..n).step_by(m).collect(),
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

    /// Project 2 of the default pattern (the name `bench-user-2@exelearning.net#2`).
    const UUID_OF_PROJECT_2: &str = "75646c85-8013-5ac8-a404-f27b4df93b5f";

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
        assert_eq!(s(10, Some(3), Some(4)), Ok((3, 4)));
        assert_eq!(s(10, Some(3), None), Ok((3, 4)), "K is the largest project");
        assert_eq!(
            s(10, None, Some(6)),
            Ok((2, 5)),
            "K alone is an upper bound"
        );
        assert_eq!(s(10000, Some(10000), None), Ok((10000, 1)));
        assert_eq!(s(5, None, None), Ok((5, 1)));
        for (n, m, k, field) in [
            (0, None, None, "--accounts"),
            (10, None, Some(0), "--users-per-project"),
            (10, Some(0), None, "--projects"),
            (3, None, Some(4), "--users-per-project"),
            (10, Some(2), Some(3), "--projects"),
            (10, Some(20), None, "--projects"),
            (10, Some(5), Some(3), "--users-per-project"),
            (10, Some(10), Some(2), "--users-per-project"),
        ] {
            let e = shape(n, m, k).unwrap_err();
            assert_eq!(e.field, field, "{e}");
        }
    }

    /// The layout by its formula: account a is in project a mod M and in no other, the owner is the
    /// smallest such a, and upstream's one-user-per-project mapping (virtual user i: account i mod N,
    /// project i mod M) lands every i < N, and every i when M divides N, in a project of its account.
    #[test]
    fn account_a_is_in_project_a_mod_m() {
        for (n, m, k) in [
            (8, None, Some(2)),
            (1000, Some(250), None),
            (10, None, Some(4)),
            (10, Some(3), None),
            (7, None, None),
            (5, Some(1), None),
            (12, None, Some(12)),
        ] {
            let s = shape(n, m, k).unwrap();
            let p = plan(s, &pat(), Visibility::Private);
            let m = s.projects as usize;
            let members = |q: &PlannedProject| {
                let mut v = vec![q.owner];
                v.extend(&q.collaborators);
                v
            };
            for a in 0..n as usize {
                let q = a % m;
                assert_eq!(p.accounts[a].project, q, "{s:?} account {a}");
                for (j, proj) in p.projects.iter().enumerate() {
                    assert_eq!(members(proj).contains(&a), j == q, "{s:?} {a} in {j}");
                }
                let smallest = (0..n as usize).find(|b| b % m == q).unwrap();
                assert_eq!(p.projects[q].owner, smallest, "{s:?}");
                let role = if a == smallest {
                    Role::Owner
                } else {
                    Role::Collaborator
                };
                assert_eq!(p.accounts[a].role, role, "{s:?} account {a}");
            }
            let most = p.projects.iter().map(|q| members(q).len()).max().unwrap();
            assert_eq!(most as u64, s.users_per_project, "{s:?}");
            assert_eq!(p.collaborator_count(), n as usize - m);
            let vus = if (n as usize).is_multiple_of(m) {
                3 * n
            } else {
                n
            };
            for i in 0..vus as usize {
                let account = i % n as usize;
                assert!(
                    members(&p.projects[i % m]).contains(&account),
                    "{s:?} vu {i}"
                );
            }
        }
    }

    /// The manifest lists members project by project: the first U entries fill ⌈U / K⌉ rooms.
    #[test]
    fn manifest_order_groups_each_project() {
        let p = plan(
            shape(1000, None, Some(4)).unwrap(),
            &pat(),
            Visibility::Private,
        );
        let order: Vec<usize> = p.manifest_order().collect();
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..1000).collect::<Vec<_>>(), "every account once");
        assert_eq!(order[..5], [0, 250, 500, 750, 1]);
        for (j, &a) in order.iter().enumerate() {
            assert_eq!(p.accounts[a].project, j / 4, "entry {j}");
            assert_eq!(p.accounts[a].role == Role::Owner, j % 4 == 0, "entry {j}");
        }
    }

    #[test]
    fn owner_first_and_stable_uuids() {
        let p = plan(
            shape(8, Some(2), Some(4)).unwrap(),
            &pat(),
            Visibility::Private,
        );
        assert_eq!(p.projects[0].owner, 0);
        assert_eq!(p.projects[0].collaborators, vec![2, 4, 6]);
        assert_eq!(p.projects[1].owner, 1);
        assert_eq!(p.projects[1].collaborators, vec![3, 5, 7]);
        assert_eq!(p.accounts[5].project, 1);
        assert_eq!(p.accounts[5].role, Role::Collaborator);
        assert_eq!(p.accounts[1].role, Role::Owner);
        assert_eq!(p.accounts[0].email, "bench-user-0@exelearning.net");
        let again = plan(
            shape(16, Some(4), Some(4)).unwrap(),
            &pat(),
            Visibility::Private,
        );
        let uuids = |p: &Plan| {
            p.projects
                .iter()
                .map(|q| q.uuid.clone())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            uuids(&again)[..2],
            uuids(&p)[..],
            "a project keeps its uuid"
        );
        let u = &p.projects[0].uuid;
        assert_eq!(u.len(), 36);
        assert_eq!(u, &u.to_lowercase());
        assert_eq!(&u[14..15], "5", "uuid v5");
        // One user per project (the default) names the projects as earlier exectl did.
        let one = plan(shape(3, None, None).unwrap(), &pat(), Visibility::Private);
        assert_eq!(one.projects[2].uuid, UUID_OF_PROJECT_2);
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

    /// A room size's accounts are a pattern of their own, which the base pattern's LIKE does not
    /// match (nor the reverse), so each has its manifest and a reset of one leaves the others.
    #[test]
    fn each_room_size_has_accounts_of_its_own() {
        let r10 = pat().for_room(10).unwrap();
        assert_eq!(r10.text(), "bench-user-{i}@r10.exelearning.net");
        let like = |p: &EmailPattern, email: &str| {
            let l = p.like();
            let (a, b) = l.split_once('%').unwrap();
            let (a, b) = (a.replace("!_", "_"), b.replace("!_", "_"));
            email.starts_with(&a) && email.ends_with(&b) && email.len() >= a.len() + b.len()
        };
        assert!(like(&r10, &r10.email(3)) && like(&pat(), &pat().email(3)));
        assert!(
            !like(&pat(), &r10.email(3)),
            "the base pattern's reset leaves the room's"
        );
        assert!(!like(&r10, &pat().email(3)));
        assert!(!like(&r10, &pat().for_room(100).unwrap().email(3)));
        let weird = EmailPattern {
            prefix: "a@x.org-".into(),
            suffix: String::new(),
        };
        assert_eq!(weird.for_room(2).unwrap_err().field, "--email-pattern");
    }
}

//! A sweep's shape — its variables and their values, its repeats, and its levels or search — from the
//! command line's flags and a sweep file (flags win), as a sweep file gives them (`SweepFile`), checked
//! before the first deploy (exit 2 naming the flag or key); and a resumed sweep's shape held to the one
//! its results.json recorded. Also a campaign row's (`row_shape`).

use std::path::Path;

use crate::ops::values::count_flag;
use exectl_core::bench::parse_levels;
use exectl_core::error::UsageError;
use exectl_core::sweep::file::SweepFile;
use exectl_core::sweep::results::SweepResults;
use exectl_core::sweep::search::{Bounds, DEFAULT_PRECISION};
use exectl_core::sweep::vary::{self, Vary, Workload};

/// What each point's bench runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// The same levels at every point.
    Levels(Vec<u64>),
    /// `--find-capacity`: one-level benches, grown then bisected.
    Search(Bounds),
    /// `--find-room`: one-level benches of `users` at once, each over rooms of the size probed (its
    /// own manifest), grown then bisected over the room size.
    Room { bounds: Bounds, users: u64 },
}

impl Mode {
    /// The most users a point's bench may ask for (the accounts to prepare).
    pub fn top(&self) -> u64 {
        match self {
            Mode::Levels(l) => l.last().copied().unwrap_or(0),
            Mode::Search(b) => b.to,
            Mode::Room { users, .. } => *users,
        }
    }

    /// The search's bounds (None: fixed levels).
    pub fn bounds(&self) -> Option<Bounds> {
        match self {
            Mode::Levels(_) => None,
            Mode::Search(b) | Mode::Room { bounds: b, .. } => Some(*b),
        }
    }
}

/// Most runs of one value.
const MAX_REPEAT: u64 = 50;

/// The search's first level when --from is not given.
const DEFAULT_FROM: u64 = 100;

/// The room-size search's first room when --from is not given: two collaborators.
const DEFAULT_ROOM_FROM: u64 = 2;

/// The variables, the repeats and the levels or search: the flags', else the sweep file's.
pub fn shape(flags: &SweepFile, file: &SweepFile) -> Result<(Vec<Vary>, u32, Mode), UsageError> {
    let vary = variables(flags, file)?;
    shaped(vary, flags, file)
}

/// A campaign row's sweep, as its file gives it: its variable (none: its levels, or its search, on
/// the row's stack as it is), repeats and levels or search, checked as a sweep file's.
pub fn row_shape(file: &SweepFile) -> Result<(Vec<Vary>, u32, Mode), UsageError> {
    let none = SweepFile::default();
    let vary = match file.vary.is_empty() {
        true => Vec::new(),
        false => variables(&none, file)?,
    };
    shaped(vary, &none, file)
}

fn shaped(
    vary: Vec<Vary>,
    flags: &SweepFile,
    file: &SweepFile,
) -> Result<(Vec<Vary>, u32, Mode), UsageError> {
    let repeat = match flags.repeat.as_ref().or(file.repeat.as_ref()) {
        Some(k) => count_flag("--repeat", k, 1, MAX_REPEAT)? as u32,
        None => 1,
    };
    Ok((vary, repeat, mode(flags, file)?))
}

pub fn read_sweep_file(path: &Path) -> Result<SweepFile, UsageError> {
    let body = crate::shell::user_file::read_named(
        path,
        "--sweep-file",
        crate::shell::user_file::WRITTEN,
        "give the path of a readable sweep file",
    )?;
    exectl_core::sweep::file::parse(&path.display().to_string(), &body)
}

/// A resumed sweep is the one recorded: what its command line and sweep file give now (the file read
/// again, where the sweep began) must be the variables, values, repeats and levels or search that
/// results.json recorded, else the points to come would not be the sweep's (an edited sweep file,
/// c,d,e -> c,X,Y, ran X and Y as its points 2 and 3). Refused naming each field that differs.
pub fn not_changed(
    r: &SweepResults,
    sweep_file: Option<&Path>,
    vary: &[Vary],
    repeat: u32,
    mode: &Mode,
) -> Result<(), UsageError> {
    let list = |v: &[String]| v.join(",");
    let values = |vs: &[Vec<String>]| vs.iter().map(|v| list(v)).collect::<Vec<_>>().join(" × ");
    let (names, now_values): (Vec<String>, Vec<Vec<String>>) = vary
        .iter()
        .map(|v| (v.var.name(), v.values.clone()))
        .unzip();
    let (levels, search, room_users) = match mode {
        Mode::Levels(l) => (l.clone(), None, None),
        Mode::Search(b) => (vec![], Some(*b), None),
        Mode::Room { bounds, users } => (vec![], Some(*bounds), Some(*users)),
    };
    let shown_search = |b: &Option<Bounds>, room: Option<u64>| match (b, room) {
        (Some(b), room) => format!(
            "{} --from {} --to {} --precision {}%",
            match room {
                Some(u) => format!("--find-room --users {u}"),
                None => "--find-capacity".into(),
            },
            b.from,
            b.to,
            exectl_core::bench::decimal::show(b.precision * 100.0)
        ),
        (None, _) => "none".into(),
    };
    let shown_levels = |l: &[u64]| match l.is_empty() {
        true => "none".to_string(),
        false => l.iter().map(u64::to_string).collect::<Vec<_>>().join(","),
    };
    let mut differ: Vec<String> = Vec::new();
    if names != r.variables {
        differ.push(format!(
            "variables {} (recorded {})",
            list(&names),
            list(&r.variables)
        ));
    } else if now_values != r.values {
        differ.push(format!(
            "values {} (recorded {})",
            values(&now_values),
            values(&r.values)
        ));
    }
    if repeat != r.repeat {
        differ.push(format!("repeat {repeat} (recorded {})", r.repeat));
    }
    if levels != r.levels {
        differ.push(format!(
            "levels {} (recorded {})",
            shown_levels(&levels),
            shown_levels(&r.levels)
        ));
    }
    if search != r.search || room_users != r.room_users {
        differ.push(format!(
            "search {} (recorded {})",
            shown_search(&search, room_users),
            shown_search(&r.search, r.room_users)
        ));
    }
    if differ.is_empty() {
        return Ok(());
    }
    let from = match sweep_file {
        Some(f) => format!("its sweep file {} now gives", f.display()),
        None => "its command line now gives".to_string(),
    };
    Err(UsageError::new(
        "--resume",
        &r.run_id,
        format!(
            "{from} {}, not what the sweep began with",
            differ.join("; ")
        ),
        match sweep_file {
            Some(_) => "put the sweep file back as it was when the sweep began, or start a new sweep with it",
            None => "start a new sweep",
        },
    ))
}

/// The variables of `--vary` (or the file's): one, or two with `--matrix`.
pub fn variables(a: &SweepFile, file: &SweepFile) -> Result<Vec<Vary>, UsageError> {
    let given = if a.vary.is_empty() {
        &file.vary
    } else {
        &a.vary
    };
    let vary: Vec<Vary> = given
        .iter()
        .map(|v| vary::parse("--vary", v))
        .collect::<Result<_, _>>()?;
    let matrix = a.matrix || file.matrix;
    match (vary.len(), matrix) {
        (0, _) => Err(UsageError::new(
            "--vary",
            "",
            "no variable",
            "give --vary VAR=V1,V2,... (e.g. --vary nginx=baseline-default,tuned-least-conn), or a --sweep-file",
        )),
        (1, false) => Ok(vary),
        (2, true) => {
            if vary[0].var == vary[1].var {
                return Err(UsageError::new(
                    "--vary",
                    given.join(" "),
                    "the same variable twice",
                    "give two different variables to --matrix",
                ));
            }
            Ok(vary)
        }
        (1, true) => Err(UsageError::new(
            "--matrix",
            "true",
            "one variable: a matrix needs two",
            "give a second --vary, or drop --matrix",
        )),
        (n, _) => Err(UsageError::new(
            "--vary",
            given.join(" "),
            format!("{n} variables: a sweep changes one thing at a time"),
            if n == 2 {
                "give one --vary, or add --matrix to sweep every pair of two variables"
            } else {
                "give one --vary (or two with --matrix)"
            },
        )),
    }
}

/// Fixed levels, the capacity search or the room-size search: the flags' when they give one, else
/// the sweep file's.
pub fn mode(a: &SweepFile, file: &SweepFile) -> Result<Mode, UsageError> {
    let chosen = match a.levels.is_some() || a.find_capacity || a.find_room {
        true => a,
        false => file,
    };
    // The file's from, to and precision are its find_capacity's or its find_room's: a search reads
    // them only when they are its own (rooms of 2..64 are no capacity search's levels).
    let none = SweepFile::default();
    let file_of = |room: bool| match (room, file.find_room, file.find_capacity) {
        (true, true, _) | (false, _, true) => file,
        _ => &none,
    };
    if chosen.find_room {
        return room_mode(a, file_of(true));
    }
    // The file's `users` is its find_room's, which flags choosing another mode set aside.
    if let Some(users) = &a.users {
        return Err(UsageError::new(
            "--users",
            users,
            "--users is the room-size search's: the users at once of each room it probes",
            "add --find-room (with --to, the largest room), or drop --users",
        ));
    }
    let search = chosen.find_capacity;
    if !search {
        let levels = a.levels.as_ref().or(file.levels.as_ref()).ok_or_else(|| {
            UsageError::new(
                "--levels",
                "",
                "no levels and no --find-capacity",
                "give --levels N,N,... for each point's bench, or --find-capacity --to N",
            )
        })?;
        return Ok(Mode::Levels(parse_levels(levels)?));
    }
    let file = file_of(false);
    let users =
        |flag: &str, v: &String| count_flag(flag, v, 1, exectl_core::bench::levels::MAX_USERS);
    let from = match a.from.as_ref().or(file.from.as_ref()) {
        Some(v) => users("--from", v)?,
        None => DEFAULT_FROM,
    };
    let to = a.to.as_ref().or(file.to.as_ref()).ok_or_else(|| {
        UsageError::new(
            "--to",
            "",
            "the search needs its last level",
            "give --to N (its accounts are prepared), e.g. --find-capacity --to 20000",
        )
    })?;
    let to = users("--to", to)?;
    let precision = match a.precision.as_ref().or(file.precision.as_ref()) {
        Some(p) => percent(p)?,
        None => DEFAULT_PRECISION,
    };
    Ok(Mode::Search(Bounds::new(from, to, precision)?))
}

/// `--find-room --users N [--from K] --to K [--precision P]`: the largest room of N users at once.
pub fn room_mode(a: &SweepFile, file: &SweepFile) -> Result<Mode, UsageError> {
    let given = |f: fn(&SweepFile) -> &Option<String>| f(a).as_ref().or(f(file).as_ref());
    let users = given(|f| &f.users).ok_or_else(|| {
        UsageError::new(
            "--users",
            "",
            "the room-size search needs the users at once of its levels",
            "give --users N (its accounts are prepared), e.g. --find-room --users 1000 --to 500",
        )
    })?;
    let users = count_flag("--users", users, 2, exectl_core::bench::levels::MAX_USERS)?;
    let room = |flag: &str, v: &String| count_flag(flag, v, 1, Workload::MAX_ROOM);
    let from = match given(|f| &f.from) {
        Some(v) => room("--from", v)?,
        None => DEFAULT_ROOM_FROM,
    };
    let to = given(|f| &f.to).ok_or_else(|| {
        UsageError::new(
            "--to",
            "",
            "the room-size search needs its largest room",
            format!("give --to K (at most --users, {users}), e.g. --find-room --users {users} --to {users}"),
        )
    })?;
    let to = room("--to", to)?;
    if to > users {
        return Err(UsageError::new(
            "--to",
            to,
            format!("a room of {to} needs more users than the level's {users}"),
            format!("give --to {users} or less, or more --users"),
        ));
    }
    if from >= to {
        return Err(UsageError::new(
            "--from",
            from,
            format!("the room-size search needs --from below --to (--to is {to})"),
            format!("give e.g. --find-room --users {users} --from 2 --to {to}"),
        ));
    }
    let precision = match given(|f| &f.precision) {
        Some(p) => percent(p)?,
        None => DEFAULT_PRECISION,
    };
    Ok(Mode::Room {
        bounds: Bounds::new(from, to, precision)?,
        users,
    })
}

/// A percent with its sign, `10%` or `0.5%`, from 0.1 % to 100 %. A bare number is refused: `0.1`
/// could mean 10 % or 0.1 %.
pub fn percent(text: &str) -> Result<f64, UsageError> {
    let bad = |problem: &str| {
        UsageError::new(
            "--precision",
            text,
            problem,
            "give a percent from 0.1% to 100% with its %, e.g. --precision 10%",
        )
    };
    let t = text.trim();
    let Some(p) = t.strip_suffix('%') else {
        return Err(bad(if t.parse::<f64>().is_ok() {
            "a number without %, which could be a share or a percent"
        } else {
            "not a percent"
        }));
    };
    match p.trim().parse::<f64>().map(|x| x / 100.0) {
        Ok(x) if exectl_core::sweep::search::PRECISION.contains(&x) => Ok(x),
        Ok(_) => Err(bad("not between 0.1 % and 100 %")),
        Err(_) => Err(bad("not a percent")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use exectl_core::sweep::vary::points;

    /// The sweep file the shape flags stand for (`--vary X --matrix ...`), as `cli::options::sweep`
    /// makes it.
    fn shaped(argv: &[&str]) -> SweepFile {
        let mut f = SweepFile::default();
        let mut it = argv.iter();
        while let Some(flag) = it.next() {
            let mut value = || Some(it.next().expect("a value").to_string());
            match *flag {
                "--vary" => f.vary.push(value().unwrap()),
                "--matrix" => f.matrix = true,
                "--find-capacity" => f.find_capacity = true,
                "--find-room" => f.find_room = true,
                "--repeat" => f.repeat = value(),
                "--levels" => f.levels = value(),
                "--from" => f.from = value(),
                "--to" => f.to = value(),
                "--precision" => f.precision = value(),
                "--users" => f.users = value(),
                other => panic!("no shape flag {other}"),
            }
        }
        f
    }

    #[test]
    fn one_variable_or_two_with_matrix() {
        let f = SweepFile::default();
        let one = variables(
            &shaped(&["--vary", "nginx=tuned-ip-hash,tuned-least-conn"]),
            &f,
        )
        .unwrap();
        assert_eq!(one.len(), 1);
        for (flags, field, says) in [
            (vec![], "--vary", "no variable"),
            (
                vec!["--vary", "instances=1,2", "--vary", "cpus=1,2"],
                "--vary",
                "one thing at a time",
            ),
            (
                vec!["--vary", "instances=1,2", "--matrix"],
                "--matrix",
                "needs two",
            ),
            (
                vec!["--vary", "cpus=1,2", "--vary", "cpus=3", "--matrix"],
                "--vary",
                "same variable",
            ),
        ] {
            let e = variables(&shaped(&flags), &f).unwrap_err();
            assert_eq!(e.field, field, "{flags:?}");
            assert!(e.problem.contains(says), "{flags:?}: {e}");
        }
        let two = variables(
            &shaped(&[
                "--vary",
                "instances=1,2",
                "--vary",
                "cpus=0.5,1",
                "--matrix",
            ]),
            &f,
        )
        .unwrap();
        assert_eq!(points(&two, 1).len(), 4);
        assert_eq!(points(&two, 3).len(), 12);
    }

    #[test]
    fn levels_or_a_search_with_its_bounds() {
        let f = SweepFile::default();
        assert_eq!(
            mode(&shaped(&["--levels", "100,200"]), &f).unwrap(),
            Mode::Levels(vec![100, 200])
        );
        let Mode::Search(b) = mode(&shaped(&["--find-capacity", "--to", "800"]), &f).unwrap()
        else {
            panic!("a search")
        };
        assert_eq!((b.from, b.to, b.precision), (100, 800, 0.10));
        let Mode::Search(b) = mode(
            &shaped(&[
                "--find-capacity",
                "--from",
                "50",
                "--to",
                "800",
                "--precision",
                "5%",
            ]),
            &f,
        )
        .unwrap() else {
            panic!("a search")
        };
        assert_eq!((b.from, b.precision), (50, 0.05));
        for (flags, field) in [
            (vec![], "--levels"),
            (vec!["--find-capacity"], "--to"),
            (vec!["--find-capacity", "--to", "50"], "--from"),
            (
                vec!["--find-capacity", "--to", "800", "--precision", "lots"],
                "--precision",
            ),
            (vec!["--levels", "200,100"], "--levels"),
        ] {
            assert_eq!(
                mode(&shaped(&flags), &f).unwrap_err().field,
                field,
                "{flags:?}"
            );
        }
    }

    #[test]
    fn a_room_size_search_with_its_users_and_bounds() {
        let f = SweepFile::default();
        let m = mode(
            &shaped(&["--find-room", "--users", "400", "--to", "200"]),
            &f,
        )
        .unwrap();
        let Mode::Room { bounds, users } = m else {
            panic!("a room search: {m:?}")
        };
        assert_eq!((bounds.from, bounds.to, users), (2, 200, 400));
        assert_eq!(m.top(), 400, "the accounts a probe needs are its users");
        // From the sweep file, unless a flag chooses another mode.
        let file = exectl_core::sweep::file::parse(
            "s.yaml",
            "vary: {cpus: [1, 2]}\nfind_room: {users: 40, from: 4, to: 32}\n",
        )
        .unwrap();
        let from_file = mode(&shaped(&[]), &file).unwrap();
        assert!(
            matches!(from_file, Mode::Room { bounds, users: 40 } if bounds.from == 4),
            "{from_file:?}"
        );
        assert_eq!(
            mode(&shaped(&["--levels", "10"]), &file).unwrap(),
            Mode::Levels(vec![10])
        );
        // A capacity search on the command line reads none of the file's room bounds.
        let e = mode(&shaped(&["--find-capacity"]), &file).unwrap_err();
        assert_eq!(e.field, "--to", "the file's find_room.to is no level: {e}");
        for (flags, field, says) in [
            (
                vec!["--find-room", "--to", "20"],
                "--users",
                "needs the users",
            ),
            (
                vec!["--find-room", "--users", "40"],
                "--to",
                "its largest room",
            ),
            (
                vec!["--find-room", "--users", "40", "--to", "50"],
                "--to",
                "a room of 50 needs more users",
            ),
            (
                vec!["--find-room", "--users", "1", "--to", "1"],
                "--users",
                "",
            ),
            (
                vec!["--find-room", "--users", "40", "--from", "8", "--to", "4"],
                "--from",
                "--from below --to",
            ),
            (
                vec!["--levels", "10", "--users", "40"],
                "--users",
                "the room-size search's",
            ),
        ] {
            let e = mode(&shaped(&flags), &f).unwrap_err();
            assert_eq!(e.field, field, "{flags:?}: {e}");
            assert!(e.problem.contains(says), "{flags:?}: {e}");
        }
    }

    /// A percent is written with its %; a bare number (a share or a percent?) and a percent out of
    /// range are refused naming the flag, the value and the fix.
    #[test]
    fn the_precision_is_a_percent_with_its_sign() {
        assert_eq!(percent("10%").unwrap(), 0.10);
        assert_eq!(percent("0.5 %").unwrap(), 0.005);
        for (text, says) in [
            ("0.1", "without %"),
            ("0.05%", "not between 0.1 % and 100 %"),
            ("150%", "not between"),
            ("ten%", "not a percent"),
            ("lots", "not a percent"),
        ] {
            let e = percent(text).unwrap_err();
            assert_eq!((e.field.as_str(), e.value.as_str()), ("--precision", text));
            assert!(e.problem.contains(says), "{text}: {e}");
            assert!(e.fix.contains("--precision 10%"), "{e}");
        }
    }
}

//! The names of the objects exectl creates on a target: one rule, `exectl-STACK-NAME`, for containers,
//! volumes and the network. Pure. The compose template writes the same prefix for volumes and the
//! network (tests/plan.rs renders it and compares with these).

/// What every object of a stack's name starts with.
pub fn prefix(stack: &str) -> String {
    format!("exectl-{stack}")
}

/// A service's container.
pub fn container(stack: &str, service: &str) -> String {
    format!("{}-{service}", prefix(stack))
}

/// One of the stack's volumes (`app-data`, `db-data`, `redis-data`).
pub fn volume(stack: &str, name: &str) -> String {
    format!("{}-{name}", prefix(stack))
}

/// Pure: whether a volume of the stack holds its database's data.
pub fn is_db_volume(stack: &str, volume_name: &str) -> bool {
    volume_name == volume(stack, "db-data")
}

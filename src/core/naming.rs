//! The names of the objects exectl creates on a target: one rule, `exectl-STACK-NAME`, for containers,
//! volumes and the network. Pure. The compose template writes the same prefix for volumes and the
//! network (a test renders it and compares with these).

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

#[cfg(test)]
mod tests {
    use crate::render::{self, Templates};
    use crate::secrets::Secrets;
    use crate::spec::{self, Raw, SpecInput};

    #[test]
    fn the_template_names_objects_by_the_same_rule() {
        let spec = spec::resolve(SpecInput {
            topology: Some(Raw::flag("topology", "ha")),
            stack: Some(Raw::flag("--stack", "s1")),
            ..Default::default()
        })
        .unwrap();
        let secrets = Secrets::parse(
            "APP_SECRET=a\nAPI_JWT_SECRET=b\nDB_PASSWORD=c\nDB_ROOT_PASSWORD=d\nADMIN_PASSWORD=e\n",
        );
        let bundle = render::render(&spec, &secrets, &Templates::embedded()).unwrap();
        let file = crate::compose::parse(bundle.get(render::COMPOSE).unwrap().text()).unwrap();
        let volumes: Vec<String> = file.volumes.values().map(|v| v.name.clone()).collect();
        for v in ["app-data", "db-data", "redis-data"] {
            assert!(volumes.contains(&super::volume("s1", v)), "{volumes:?}");
        }
        assert!(super::is_db_volume("s1", "exectl-s1-db-data"));
        assert!(!super::is_db_volume("s1", "exectl-s12-db-data"));
        let nets: Vec<String> = file.networks.values().map(|n| n.name.clone()).collect();
        assert_eq!(nets, [super::prefix("s1")]);
    }
}

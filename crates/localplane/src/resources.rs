//! Container resources as Container Apps takes them: each container's `resources` read (with
//! Azure's defaults for what is left out) and checked, the template's total held to the CPU and
//! memory combinations Learn lists for the environment's plan, and the `resources` a GET shows
//! (memory normalised, `ephemeralStorage` filled in).
//!
//! Sources (docs/FIDELITY.md, "Resources and quotas"):
//! - Learn, "Containers in Azure Container Apps" (`containers.md`, "allocations"): "the total
//!   CPU and memory allocations requested for all the containers in a container app must add up
//!   to one of the following combinations": 0.25 vCPU / 0.5Gi in 0.25 vCPU steps with memory
//!   twice the vCPU, up to 2.0 / 4.0Gi on the Consumption plan and 4.0 / 8.0Gi on the
//!   Consumption workload profile; "can be any decimal number (with a max of two decimal
//!   places)".
//! - The service's 400 for another total, as users post it (Azure/bicep-types-az#1924,
//!   Azure/bicep#10821): code `ContainerAppInvalidResourceTotal`, "The total requested CPU and
//!   memory resources for this application (CPU: 1, memory: 1.0) is invalid. Total CPU and
//!   memory for all containers defined in a Container App must add up to one of the following
//!   CPU - Memory combinations: [cpu: 0.25, memory: 0.5Gi]; ...".
//! - Its 400 for a memory string (Azure/bicep-types-az#2226, microsoft/azure-container-apps#159):
//!   "Container with name '<name>' has an invalid memory resource request: '750Mb'. The
//!   'memory' field for each container, if provided, must contain a decimal value to no more
//!   than 2 decimal places followed by 'Gi' to denote the unit (Gibibytes). Example: '1.25Gi' or
//!   '2Gi'." (its code is not in those posts: [`CODE_INVALID_REQUEST`] is a guess).
//! - What a GET shows for an app created without `resources` (`az containerapp show` outputs
//!   in Learn's tutorials): `{"cpu": 0.5, "ephemeralStorage": "2Gi", "memory": "1Gi"}`; memory
//!   sent as `1.0Gi` reads back `1Gi`; ephemeral storage by vCPU as Learn's "Use storage mounts"
//!   tabulates it (0.25 or lower: 1 GiB, 0.5 or lower: 2 GiB, 1 or lower: 4 GiB, over 1: 8 GiB).
//!
//! Amounts are kept in hundredths (of a core, of a GiB): two decimal places is all either may
//! have, so totals add up exactly.

use appmodel as wire;
use serde_json::{Value, json};

use crate::error::ArmError;

/// The code of the 400 for a template whose total is not a listed combination.
pub const CODE_INVALID_TOTAL: &str = "ContainerAppInvalidResourceTotal";
/// The code of the 400 for one container's malformed `cpu` or `memory` (a guess: the service's
/// message for a memory string is posted without its code).
pub const CODE_INVALID_REQUEST: &str = "ContainerAppInvalidResourceRequest";

/// A container's (or a template's total) CPU and memory, in hundredths of a core and of a GiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Resources {
    pub cpu: u32,
    pub memory: u32,
}

impl Resources {
    /// What a container without `resources` gets: 0.5 vCPU and 1Gi.
    pub const DEFAULT: Resources = Resources {
        cpu: 50,
        memory: 100,
    };

    /// Docker's `NanoCpus` for this CPU (1 core = 10^9).
    pub fn nano_cpus(self) -> i64 {
        i64::from(self.cpu) * 10_000_000
    }

    /// Docker's `Memory` for this memory, bytes (GiB = 2^30), rounded down.
    pub fn memory_bytes(self) -> i64 {
        i64::from(self.memory) * (1 << 30) / 100
    }

    fn add(self, o: Resources) -> Resources {
        Resources {
            cpu: self.cpu.saturating_add(o.cpu),
            memory: self.memory.saturating_add(o.memory),
        }
    }
}

/// The sum of `parts`.
pub fn total(parts: impl IntoIterator<Item = Resources>) -> Resources {
    parts.into_iter().fold(Resources::default(), Resources::add)
}

/// Which table of combinations a template is held to: the environment's plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// A Consumption-only environment (no `workloadProfiles`): up to 2 vCPU / 4Gi.
    Consumption,
    /// A workload profiles environment, on its Consumption profile: up to 4 vCPU / 8Gi.
    ConsumptionProfile,
}

impl Plan {
    /// The plan of an environment with these `properties`: a workload profiles environment
    /// when it lists `workloadProfiles`, else Consumption only.
    pub fn of_environment(properties: Option<&Value>) -> Plan {
        let profiles = properties
            .and_then(|p| p.get("workloadProfiles"))
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty());
        if profiles {
            Plan::ConsumptionProfile
        } else {
            Plan::Consumption
        }
    }

    /// The most vCPU (hundredths) of a replica on this plan.
    pub fn max_cpu(self) -> u32 {
        match self {
            Plan::Consumption => 200,
            Plan::ConsumptionProfile => 400,
        }
    }

    /// The combinations Learn lists, smallest first.
    pub fn combinations(self) -> impl Iterator<Item = Resources> {
        (1..=self.max_cpu() / 25).map(|k| Resources {
            cpu: 25 * k,
            memory: 50 * k,
        })
    }

    /// Whether `total` is one of the combinations.
    pub fn allows(self, total: Resources) -> bool {
        self.combinations().any(|c| c == total)
    }
}

/// The environment an app's or job's `properties` name (`environmentId` or
/// `managedEnvironmentId`): its name, lower-cased (the key environments are kept by).
pub fn environment_key(properties: Option<&Value>) -> String {
    properties
        .and_then(|p| {
            p.get("environmentId")
                .or_else(|| p.get("managedEnvironmentId"))
        })
        .and_then(Value::as_str)
        .and_then(|id| id.rsplit('/').next())
        .unwrap_or_default()
        .to_ascii_lowercase()
}

/// The plan of the environment `properties` name, given the `properties` of the environments
/// localplane knows by key; Consumption only when it names none of them.
pub fn plan_for<'a>(
    environment: impl Fn(&str) -> Option<&'a Value>,
    properties: Option<&Value>,
) -> Plan {
    Plan::of_environment(environment(&environment_key(properties)).filter(|p| p.is_object()))
}

/// `n` hundredths as Azure prints an amount in a combination: at least one decimal
/// (`0.25`, `0.5`, `1.0`).
fn listed(n: u32) -> String {
    match (n / 100, n % 100) {
        (i, 0) => format!("{i}.0"),
        (i, f) if f % 10 == 0 => format!("{i}.{}", f / 10),
        (i, f) => format!("{i}.{f:02}"),
    }
}

/// `n` hundredths with no trailing zeros (`0.5`, `1`, `1.25`): an amount as a GET shows it.
fn plain(n: u32) -> String {
    match (n / 100, n % 100) {
        (i, 0) => format!("{i}"),
        (i, f) if f % 10 == 0 => format!("{i}.{}", f / 10),
        (i, f) => format!("{i}.{f:02}"),
    }
}

/// `memory` as a GET shows it: `0.5Gi`, `1Gi`, `1.25Gi`.
pub fn memory_string(memory: u32) -> String {
    format!("{}Gi", plain(memory))
}

/// The ephemeral storage a container with this CPU is given (Learn's table by vCPU).
pub fn ephemeral_storage(cpu: u32) -> &'static str {
    match cpu {
        0..=25 => "1Gi",
        26..=50 => "2Gi",
        51..=100 => "4Gi",
        _ => "8Gi",
    }
}

/// The 400 for a template whose total is not one of `plan`'s combinations, worded as the
/// service words it.
pub fn invalid_total(total: Resources, plan: Plan) -> ArmError {
    let list: Vec<String> = plan
        .combinations()
        .map(|c| format!("[cpu: {}, memory: {}Gi]", listed(c.cpu), listed(c.memory)))
        .collect();
    ArmError::bad_request(
        CODE_INVALID_TOTAL,
        format!(
            "The total requested CPU and memory resources for this application (CPU: {}, memory: {}) is invalid. Total CPU and memory for all containers defined in a Container App must add up to one of the following CPU - Memory combinations: {}",
            plain(total.cpu),
            plain(total.memory),
            list.join("; ")
        ),
    )
}

/// Holds `total` (every container of a template, sidecars included) to `plan`'s combinations.
pub fn check_total(total: Resources, plan: Plan) -> Result<(), ArmError> {
    if plan.allows(total) {
        Ok(())
    } else {
        Err(invalid_total(total, plan))
    }
}

/// A container's `cpu`: greater than zero with at most two decimal places (0.5 when absent).
pub fn parse_cpu(cpu: Option<f64>, container: &str) -> Result<u32, ArmError> {
    let Some(v) = cpu else {
        return Ok(Resources::DEFAULT.cpu);
    };
    let centi = v * 100.0;
    let whole = centi.round();
    if !v.is_finite() || whole < 1.0 || (centi - whole).abs() > 1e-6 {
        return Err(ArmError::bad_request(
            CODE_INVALID_REQUEST,
            format!(
                "Container with name '{container}' has an invalid cpu resource request: '{v}'. The 'cpu' field for each container, if provided, must be a number greater than zero with no more than 2 decimal places. Example: 0.25 or 1.5."
            ),
        ));
    }
    // Past any plan's table anyway: kept large, not wrapped.
    Ok(whole.min(1e7) as u32)
}

/// A container's `memory`: a decimal with at most two decimal places followed by `Gi`,
/// greater than zero (`1Gi` when absent).
pub fn parse_memory(memory: Option<&str>, container: &str) -> Result<u32, ArmError> {
    let Some(raw) = memory else {
        return Ok(Resources::DEFAULT.memory);
    };
    let bad = || {
        ArmError::bad_request(
            CODE_INVALID_REQUEST,
            format!(
                "Container with name '{container}' has an invalid memory resource request: '{raw}'. The 'memory' field for each container, if provided, must contain a decimal value to no more than 2 decimal places followed by 'Gi' to denote the unit (Gibibytes). Example: '1.25Gi' or '2Gi'."
            ),
        )
    };
    let number = raw.strip_suffix("Gi").ok_or_else(bad)?;
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if int.is_empty()
        || int.len() > 6
        || !digits(int)
        || frac.len() > 2
        || !digits(frac)
        || number.ends_with('.')
    {
        return Err(bad());
    }
    let whole: u32 = int.parse().map_err(|_| bad())?;
    let hundredths: u32 = format!("{frac:0<2}").parse().map_err(|_| bad())?;
    let centi = whole * 100 + hundredths;
    if centi == 0 {
        return Err(bad());
    }
    Ok(centi)
}

/// A typed container's resources, with the defaults for what it leaves out.
pub fn container_resources(
    r: Option<&wire::ContainerResources>,
    container: &str,
) -> Result<Resources, ArmError> {
    Ok(Resources {
        cpu: parse_cpu(r.and_then(|r| r.cpu), container)?,
        memory: parse_memory(r.and_then(|r| r.memory.as_deref()), container)?,
    })
}

/// Fills in and normalises every container's `resources` in a template given as JSON, as a GET
/// then shows them: `cpu` (0.5 when absent), `memory` without trailing zeros (`1Gi` when
/// absent), `ephemeralStorage` by the CPU when absent; what else the client sent is kept. A
/// malformed `cpu` or `memory` is the service's 400; a member of the wrong JSON type is left for
/// the typed read to refuse (`InvalidRequestContent`).
pub fn normalize_template(template: &mut Value) -> Result<(), ArmError> {
    let Some(containers) = template.get_mut("containers").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    for c in containers.iter_mut().filter(|c| c.is_object()) {
        let name = c
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let res = c
            .as_object_mut()
            .map(|o| o.entry("resources").or_insert_with(|| json!({})));
        let Some(res) = res.and_then(Value::as_object_mut) else {
            continue;
        };
        let cpu = match res.get("cpu") {
            None => None,
            Some(v) => match v.as_f64() {
                Some(f) => Some(f),
                None => continue,
            },
        };
        let memory = match res.get("memory") {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => continue,
        };
        let cpu = parse_cpu(cpu, &name)?;
        let memory = parse_memory(memory.as_deref(), &name)?;
        res.insert("cpu".into(), json!(f64::from(cpu) / 100.0));
        res.insert("memory".into(), json!(memory_string(memory)));
        res.entry("ephemeralStorage")
            .or_insert_with(|| json!(ephemeral_storage(cpu)));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(cpu: u32, memory: u32) -> Resources {
        Resources { cpu, memory }
    }

    /// Each listed pair is accepted, and its neighbours (a step of CPU or memory off, either
    /// way) are refused, on both plans; past each plan's largest pair nothing is listed.
    #[test]
    fn the_listed_pairs_and_their_neighbours() {
        for plan in [Plan::Consumption, Plan::ConsumptionProfile] {
            let pairs: Vec<Resources> = plan.combinations().collect();
            assert_eq!(pairs.first(), Some(&r(25, 50)));
            assert_eq!(pairs.last(), Some(&r(plan.max_cpu(), 2 * plan.max_cpu())));
            for p in &pairs {
                assert!(plan.allows(*p), "{plan:?} {p:?}");
                for n in [
                    r(p.cpu - 1, p.memory),
                    r(p.cpu + 1, p.memory),
                    r(p.cpu, p.memory - 1),
                    r(p.cpu, p.memory + 1),
                    r(p.cpu, p.memory + 50),
                    r(p.cpu + 25, p.memory),
                ] {
                    assert!(!plan.allows(n), "{plan:?} {n:?}");
                    let e = check_total(n, plan).unwrap_err();
                    assert_eq!(
                        (e.status.as_u16(), e.code.as_str()),
                        (400, CODE_INVALID_TOTAL)
                    );
                }
            }
            let over = plan.max_cpu() + 25;
            assert!(!plan.allows(r(over, 2 * over)));
            assert!(!plan.allows(r(0, 0)));
        }
        // 2.25 / 4.5Gi: the Consumption workload profile only.
        assert!(!Plan::Consumption.allows(r(225, 450)));
        assert!(Plan::ConsumptionProfile.allows(r(225, 450)));
        assert!(Plan::ConsumptionProfile.allows(r(400, 800)));
    }

    /// The refusal reads as the service's (Azure/bicep-types-az#1924), whole list included.
    #[test]
    fn the_invalid_total_message_is_the_services() {
        let e = check_total(r(100, 100), Plan::Consumption).unwrap_err();
        assert_eq!(
            e.message,
            "The total requested CPU and memory resources for this application (CPU: 1, memory: 1) is invalid. Total CPU and memory for all containers defined in a Container App must add up to one of the following CPU - Memory combinations: [cpu: 0.25, memory: 0.5Gi]; [cpu: 0.5, memory: 1.0Gi]; [cpu: 0.75, memory: 1.5Gi]; [cpu: 1.0, memory: 2.0Gi]; [cpu: 1.25, memory: 2.5Gi]; [cpu: 1.5, memory: 3.0Gi]; [cpu: 1.75, memory: 3.5Gi]; [cpu: 2.0, memory: 4.0Gi]"
        );
        let e = check_total(r(450, 900), Plan::ConsumptionProfile).unwrap_err();
        assert!(
            e.message
                .ends_with("[cpu: 3.75, memory: 7.5Gi]; [cpu: 4.0, memory: 8.0Gi]"),
            "{}",
            e.message
        );
    }

    /// The total is every container's: two 0.25 / 0.5Gi containers are 0.5 / 1.0Gi (listed),
    /// 0.25 / 0.5Gi beside a default container is 0.75 / 1.5Gi (listed), three defaults are
    /// 1.5 / 3Gi, and 0.5 / 0.5Gi beside 0.5 / 1Gi is 1.0 / 1.5Gi (not listed).
    #[test]
    fn the_total_adds_up_every_container() {
        let p = Plan::Consumption;
        assert!(p.allows(total([r(25, 50), r(25, 50)])));
        assert!(p.allows(total([r(25, 50), Resources::DEFAULT])));
        assert!(p.allows(total([Resources::DEFAULT; 3])));
        assert!(!p.allows(total([r(50, 50), Resources::DEFAULT])));
        assert!(!p.allows(total([Resources::DEFAULT; 5])));
        assert!(Plan::ConsumptionProfile.allows(total([Resources::DEFAULT; 5])));
        // Uneven parts that add up to a listed pair.
        assert!(p.allows(total([r(30, 60), r(20, 40)])));
    }

    #[test]
    fn cpu_is_positive_with_at_most_two_decimals() {
        assert_eq!(parse_cpu(None, "c").unwrap(), 50);
        assert_eq!(parse_cpu(Some(0.25), "c").unwrap(), 25);
        assert_eq!(parse_cpu(Some(1.0), "c").unwrap(), 100);
        assert_eq!(parse_cpu(Some(0.01), "c").unwrap(), 1);
        assert_eq!(parse_cpu(Some(1.75), "c").unwrap(), 175);
        for bad in [0.0, -0.25, 0.005, 1.555, f64::NAN, f64::INFINITY] {
            let e = parse_cpu(Some(bad), "c").unwrap_err();
            assert_eq!(
                (e.status.as_u16(), e.code.as_str()),
                (400, CODE_INVALID_REQUEST),
                "{bad}"
            );
        }
    }

    #[test]
    fn memory_is_gi_with_at_most_two_decimals() {
        for (s, want) in [
            ("0.5Gi", 50),
            ("1Gi", 100),
            ("1.0Gi", 100),
            ("1.25Gi", 125),
            ("8Gi", 800),
            ("0.01Gi", 1),
        ] {
            assert_eq!(parse_memory(Some(s), "c").unwrap(), want, "{s}");
        }
        assert_eq!(parse_memory(None, "c").unwrap(), 100);
        for bad in [
            "750Mb", "1.555Gi", "1", "1G", "1gi", ".5Gi", "1.Gi", "0Gi", "0.00Gi", "-1Gi", "Gi",
            " 1Gi", "1e3Gi", "1,5Gi",
        ] {
            let e = parse_memory(Some(bad), "sub").unwrap_err();
            assert_eq!(
                (e.status.as_u16(), e.code.as_str()),
                (400, CODE_INVALID_REQUEST),
                "{bad}"
            );
            assert!(
                e.message.starts_with(&format!(
                    "Container with name 'sub' has an invalid memory resource request: '{bad}'."
                )),
                "{}",
                e.message
            );
        }
    }

    /// A GET shows the defaults, memory without trailing zeros and the ephemeral storage by
    /// CPU; what the client sent besides is kept.
    #[test]
    fn templates_are_normalised_as_a_get_shows_them() {
        let mut t = json!({"containers": [
            {"name": "a", "image": "i"},
            {"name": "b", "image": "i", "resources": {"cpu": 0.25, "memory": "0.50Gi"}},
            {"name": "c", "image": "i", "resources": {"cpu": 1, "memory": "2.0Gi", "ephemeralStorage": "3Gi", "gpu": 0}},
        ]});
        normalize_template(&mut t).unwrap();
        assert_eq!(
            t["containers"][0]["resources"],
            json!({"cpu": 0.5, "memory": "1Gi", "ephemeralStorage": "2Gi"})
        );
        assert_eq!(
            t["containers"][1]["resources"],
            json!({"cpu": 0.25, "memory": "0.5Gi", "ephemeralStorage": "1Gi"})
        );
        assert_eq!(
            t["containers"][2]["resources"],
            json!({"cpu": 1.0, "memory": "2Gi", "ephemeralStorage": "3Gi", "gpu": 0})
        );
        // Normalising again changes nothing (a GET sent back as a PUT is the same template).
        let again = t.clone();
        normalize_template(&mut t).unwrap();
        assert_eq!(t, again);
        // A string cpu is left for the typed read; a bad memory string is the 400.
        let mut t = json!({"containers": [{"name": "a", "resources": {"cpu": "0.5"}}]});
        normalize_template(&mut t).unwrap();
        assert_eq!(t["containers"][0]["resources"], json!({"cpu": "0.5"}));
        let mut t = json!({"containers": [{"name": "a", "resources": {"memory": "512Mi"}}]});
        assert_eq!(
            normalize_template(&mut t).unwrap_err().code,
            CODE_INVALID_REQUEST
        );
    }

    #[test]
    fn docker_limits_of_a_listed_pair() {
        assert_eq!(r(50, 100).nano_cpus(), 500_000_000);
        assert_eq!(r(50, 100).memory_bytes(), 1_073_741_824);
        assert_eq!(r(25, 50).memory_bytes(), 536_870_912);
        assert_eq!(r(175, 350).memory_bytes(), 3_758_096_384);
    }

    #[test]
    fn ephemeral_storage_by_vcpu() {
        assert_eq!(ephemeral_storage(25), "1Gi");
        assert_eq!(ephemeral_storage(26), "2Gi");
        assert_eq!(ephemeral_storage(50), "2Gi");
        assert_eq!(ephemeral_storage(100), "4Gi");
        assert_eq!(ephemeral_storage(101), "8Gi");
    }

    #[test]
    fn the_plan_follows_the_environments_workload_profiles() {
        assert_eq!(Plan::of_environment(None), Plan::Consumption);
        assert_eq!(Plan::of_environment(Some(&json!({}))), Plan::Consumption);
        assert_eq!(
            Plan::of_environment(Some(&json!({"workloadProfiles": []}))),
            Plan::Consumption
        );
        assert_eq!(
            Plan::of_environment(Some(&json!({"workloadProfiles": [
                {"name": "Consumption", "workloadProfileType": "Consumption"}
            ]}))),
            Plan::ConsumptionProfile
        );
    }
}

//! Writes the members of every scaling family (`benches/support/families.rs`, the inputs of
//! `tests/scaling.rs` and `benches/scaling.rs`) as YAML files, so that two builds of the
//! `celcost` binary can be compared on the same inputs (time, peak memory, output):
//!
//! `cargo run --release --example families -- DIR 1 4` writes family `i`'s member at `base × k`
//! for each multiplier `k` to `DIR/fNN-xK/00000.yaml, ...` and prints one line per family:
//! `fNN <tab> base <tab> name`.

#[path = "../benches/support/families.rs"]
mod families;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((dir, multipliers)) = args.split_first() else {
        return Err("usage: families DIR MULTIPLIER...".into());
    };
    let multipliers = multipliers
        .iter()
        .map(|m| m.parse::<usize>())
        .collect::<Result<Vec<_>, _>>()?;
    let dir = std::path::Path::new(dir);
    for (i, family) in families::all().iter().enumerate() {
        for &k in &multipliers {
            let member = dir.join(format!("f{i:02}-x{k}"));
            std::fs::create_dir_all(&member)?;
            for (j, doc) in (family.make)(family.base * k).iter().enumerate() {
                std::fs::write(member.join(format!("{j:05}.yaml")), doc)?;
            }
        }
        println!("f{i:02}\t{}\t{}", family.base, family.name);
    }
    Ok(())
}

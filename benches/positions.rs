//! What locating costs (`cargo bench --bench positions`): reading every corpus file
//! (`../shared/corpus`, or `$CELCOST_CORPUS`; crds, vaps, maps, fixtures) with and without
//! positions, and the whole estimate with its locations; the best of five runs of each.

#[path = "../tests/it/common/mod.rs"]
mod common;

use celcost::Estimator;
use celcost::cli::{Outcome, Run};
use common::{corpus_dir, files_under};

fn main() {
    let Some(corpus) = corpus_dir() else {
        println!("SKIPPED: no corpus (../shared/corpus beside the checkout, or $CELCOST_CORPUS)");
        return;
    };
    let mut files = Vec::new();
    for sub in ["crds", "vaps", "maps", "fixtures"] {
        files_under(&corpus.join(sub), &mut files);
    }
    let texts: Vec<(String, String)> = files
        .iter()
        .filter_map(|f| Some((f.display().to_string(), std::fs::read_to_string(f).ok()?)))
        .collect();
    let bytes: usize = texts.iter().map(|(_, t)| t.len()).sum();
    let time = |f: &dyn Fn()| {
        let mut best = f64::MAX;
        for _ in 0..5 {
            let t = std::time::Instant::now();
            f();
            best = best.min(t.elapsed().as_secs_f64());
        }
        best
    };
    let plain = time(&|| {
        for (_, t) in &texts {
            std::hint::black_box(celcost::input::parse_documents(t));
        }
    });
    let located = time(&|| {
        for (_, t) in &texts {
            std::hint::black_box(celcost::input::parse_documents_located(t));
        }
    });
    let nodes: usize = texts
        .iter()
        .flat_map(|(_, t)| celcost::input::parse_documents_located(t))
        .filter_map(|(_, p)| p.map(|p| p.len()))
        .sum();
    let estimator = Estimator::default();
    let estimate = time(&|| {
        for (name, t) in &texts {
            let mut o = Outcome::default();
            Run::new(&estimator).text(name, t, &mut o);
            std::hint::black_box(o);
        }
    });
    eprintln!(
        "{} files, {:.1} MiB, {nodes} nodes: parse {plain:.3} s, parse with positions {located:.3} s \
         (+{:.3} s); the whole estimate with locations {estimate:.3} s",
        texts.len(),
        bytes as f64 / (1 << 20) as f64,
        located - plain
    );
}

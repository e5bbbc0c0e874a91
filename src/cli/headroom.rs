//! `celcost headroom`: the objects of files, directories or standard input (`-`), read as
//! `estimate` reads them, each CRD's headroom searched ([`celcost_advice::suggest::headroom`])
//! on every minor judged, objects in parallel.

use std::path::PathBuf;

use celcost_advice::suggest::{HeadroomSettings, ObjectHeadroom, headroom};
use celcost_core::estimate::Estimator;
use celcost_core::estimate::range::RangeEstimator;
use celcost_core::input::{objects_of, parse_documents};

use super::{STDIN, StdinText, alike_copies, is_stdin, parallel, threads};

/// A file to read, or standard input's text.
enum Input {
    File(PathBuf),
    Text(String),
}

impl Input {
    /// Its size in bytes (0 when it cannot be read: it fails in its turn).
    fn size(&self) -> u64 {
        match self {
            Input::File(f) => std::fs::metadata(f).map(|m| m.len()).unwrap_or(0),
            Input::Text(t) => t.len() as u64,
        }
    }
}

/// The formats of `celcost headroom`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum HeadroomFormat {
    #[default]
    Table,
    Json,
    Markdown,
}

/// What `celcost headroom` found, and its exit status.
#[derive(Debug, Default)]
pub struct HeadroomRun {
    pub objects: Vec<ObjectHeadroom>,
    /// Unreadable files and documents, each naming its source.
    pub input_errors: Vec<String>,
    /// Documents that are not Kubernetes objects.
    pub skipped: Vec<String>,
    /// 0, or 2 on unreadable input or a search or estimate that stopped.
    pub code: i32,
}

impl HeadroomRun {
    pub fn render(&self, format: HeadroomFormat) -> String {
        use celcost_advice::output::headroom::{render_headroom_markdown, render_headroom_table};
        match format {
            HeadroomFormat::Table => render_headroom_table(&self.objects),
            HeadroomFormat::Json => celcost_advice::output::json::render_json(&self.objects),
            HeadroomFormat::Markdown => render_headroom_markdown(&self.objects),
        }
    }
}

/// The headroom of every object in `paths` (`-`: `stdin`), judged by `estimators` (oldest
/// first). Objects that are not CRDs get a note and no schemas.
pub fn run_headroom(
    estimators: Vec<Estimator>,
    paths: &[PathBuf],
    stdin: Option<StdinText>,
    settings: &HeadroomSettings,
) -> HeadroomRun {
    let mut run = HeadroomRun::default();
    // The inputs, read and parsed by the worker that searches them (a file's objects are held
    // only while it is searched), the biggest files first.
    let mut inputs: Vec<Input> = Vec::new();
    for p in paths {
        if is_stdin(p) {
            match &stdin {
                Some(Ok(t)) => inputs.push(Input::Text(t.to_string())),
                Some(Err(e)) => run.input_errors.push(e.clone()),
                None => run
                    .input_errors
                    .push(format!("-: standard input was not read ({STDIN})")),
            }
            continue;
        }
        let mut files = Vec::new();
        celcost_core::input::collect_files(p, &mut files, &mut run.input_errors);
        inputs.extend(files.into_iter().map(Input::File));
    }
    let range = RangeEstimator::new(estimators);
    let judged: Vec<&Estimator> = range.estimators().iter().collect();
    let mut order: Vec<usize> = (0..inputs.len()).collect();
    order.sort_by_cached_key(|&i| std::cmp::Reverse(inputs[i].size()));
    let mut searched = parallel(&order, threads(), |&i| {
        let mut one = HeadroomRun::default();
        let (name, text) = match &inputs[i] {
            Input::Text(t) => (STDIN.to_string(), t.clone()),
            Input::File(f) => match std::fs::read(f).map(String::from_utf8) {
                Err(e) => {
                    one.input_errors.push(format!("{}: {e}", f.display()));
                    return (i, one);
                }
                Ok(Err(_)) => {
                    one.input_errors
                        .push(format!("{}: not UTF-8 text (binary file?)", f.display()));
                    return (i, one);
                }
                Ok(Ok(t)) => (f.display().to_string(), t),
            },
        };
        for doc in parse_documents(&text) {
            let source = format!("{name}#{}", doc.index);
            match doc.value {
                Err(e) => one.input_errors.push(format!("{source}: {e}")),
                Ok(serde_json::Value::Null) => {}
                Ok(v) if !v.is_object() => one
                    .skipped
                    .push(format!("{source}: not a Kubernetes object")),
                Ok(v) => {
                    for o in objects_of(&source, v) {
                        let profile = std::sync::OnceLock::new();
                        let alike = alike_copies(&range, &profile);
                        one.objects.push(headroom(
                            &judged,
                            Some(&*alike),
                            &o.source,
                            &o.value,
                            settings,
                        ));
                    }
                }
            }
        }
        (i, one)
    });
    searched.sort_by_key(|(i, _)| *i);
    for (_, one) in searched {
        run.objects.extend(one.objects);
        run.input_errors.extend(one.input_errors);
        run.skipped.extend(one.skipped);
    }
    run.code = if !run.input_errors.is_empty() || run.objects.iter().any(|o| o.stopped) {
        2
    } else {
        0
    };
    run
}

//! Unit tests' log capture: the lines logged on the calling thread while a [`Capture`] lives (other tests of the
//! same binary log on their own threads and are not seen), or, for what runs on threads of its own, the lines of
//! any thread that contain a marker (a component name unique to the test): [`capture_marked`].

use std::cell::RefCell;

use parking_lot::Mutex;

/// Marker captures: (id, marker, lines).
type Marked = Vec<(u64, String, Vec<(log::Level, String)>)>;

static MARKED: Mutex<Marked> = Mutex::new(Vec::new());

thread_local! {
    /// The lines logged on this thread while capturing; `None` when not capturing.
    static LINES: RefCell<Option<Vec<(log::Level, String)>>> = const { RefCell::new(None) };
}

struct ThreadLogger;

impl log::Log for ThreadLogger {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }

    fn log(&self, record: &log::Record<'_>) {
        let mut line = None;
        let mut text = || line.get_or_insert_with(|| record.args().to_string()).clone();
        LINES.with(|lines| {
            if let Some(lines) = lines.borrow_mut().as_mut() {
                lines.push((record.level(), text()));
            }
        });
        let mut marked = MARKED.lock();
        if !marked.is_empty() {
            let text = text();
            for (_, marker, lines) in marked.iter_mut() {
                if text.contains(marker.as_str()) {
                    lines.push((record.level(), text.clone()));
                }
            }
        }
    }

    fn flush(&self) {}
}

static LOGGER: ThreadLogger = ThreadLogger;

/// Captures this thread's log lines until dropped.
pub(crate) struct Capture(());

fn install() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        if log::set_logger(&LOGGER).is_ok() {
            log::set_max_level(log::LevelFilter::Trace);
        }
    });
}

/// Starts capturing this thread's log lines (installing the test logger the first time).
pub(crate) fn capture() -> Capture {
    install();
    LINES.with(|lines| *lines.borrow_mut() = Some(Vec::new()));
    Capture(())
}

/// Captures the lines of every thread that contain `marker`, until dropped.
pub(crate) struct MarkedCapture(u64);

/// Starts capturing the lines that contain `marker`, whatever thread logs them.
pub(crate) fn capture_marked(marker: &str) -> MarkedCapture {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    install();
    let id = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    MARKED.lock().push((id, marker.to_owned(), Vec::new()));
    MarkedCapture(id)
}

impl MarkedCapture {
    /// The lines captured so far (and forgets them).
    pub(crate) fn take(&self) -> Vec<(log::Level, String)> {
        let mut marked = MARKED.lock();
        marked
            .iter_mut()
            .find(|(id, _, _)| *id == self.0)
            .map(|(_, _, lines)| std::mem::take(lines))
            .unwrap_or_default()
    }
}

impl Drop for MarkedCapture {
    fn drop(&mut self) {
        MARKED.lock().retain(|(id, _, _)| *id != self.0);
    }
}

impl Capture {
    /// The lines logged so far (and forgets them).
    pub(crate) fn take(&self) -> Vec<(log::Level, String)> {
        LINES.with(|lines| lines.borrow_mut().as_mut().map(std::mem::take).unwrap_or_default())
    }

    /// The lines logged so far at `level` or more severe (and forgets every line).
    pub(crate) fn take_at(&self, level: log::Level) -> Vec<(log::Level, String)> {
        self.take().into_iter().filter(|(l, _)| *l <= level).collect()
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        LINES.with(|lines| *lines.borrow_mut() = None);
    }
}

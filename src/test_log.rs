//! Unit tests' log capture: the lines logged on the calling thread while a [`Capture`] lives (other tests of the
//! same binary log on their own threads and are not seen).

use std::cell::RefCell;

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
        LINES.with(|lines| {
            if let Some(lines) = lines.borrow_mut().as_mut() {
                lines.push((record.level(), record.args().to_string()));
            }
        });
    }

    fn flush(&self) {}
}

static LOGGER: ThreadLogger = ThreadLogger;

/// Captures this thread's log lines until dropped.
pub(crate) struct Capture(());

/// Starts capturing this thread's log lines (installing the test logger the first time).
pub(crate) fn capture() -> Capture {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        if log::set_logger(&LOGGER).is_ok() {
            log::set_max_level(log::LevelFilter::Trace);
        }
    });
    LINES.with(|lines| *lines.borrow_mut() = Some(Vec::new()));
    Capture(())
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

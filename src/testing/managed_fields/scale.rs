pub(crate) fn _placeholder() {}

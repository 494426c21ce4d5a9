/* A dependency of libdlscope_a: in a's local scope only. */
int dlscope_b_only(void) {
    return 42;
}

int dlscope_b_other(void) {
    return 7;
}

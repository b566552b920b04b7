// An ordinary shared library with no plugin info block.
extern "C" __attribute__((visibility("default"))) int not_a_plugin_answer() { return 42; }

//===- main.cpp - mp-run's entry point ------------------------------------===//
//
// mp-run's command line lives in mp-run.cpp (mp_run_main), so that the same
// code links into the tool and into the device bundle's shared library.
//
//===----------------------------------------------------------------------===//

extern "C" int mp_run_main(int argc, char **argv);

int main(int argc, char **argv) { return mp_run_main(argc, argv); }

// tests/fuzz/entropic_off.cpp: linked into the fuzz targets whose inputs each run a lot of
// code (the network clients, the S3 configuration lookup): 20,000 and more coverage features an
// execution, on whose bookkeeping libFuzzer's entropic schedule spends most of the time (perf,
// http1_fuzz: 60 % in InputCorpus::UpdateFeatureFrequency; 60 executions/s with it, 190
// without). It is off, unless the command line sets -entropic itself.
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
    for (int i = 1; i < *argc; ++i) {
        if (std::strncmp((*argv)[i], "-entropic=", 10) == 0) {
            return 0;
        }
    }
    static char entropic_off[] = "-entropic=0";
    static std::vector<char*> arguments;
    arguments.assign(*argv, *argv + *argc);
    arguments.insert(arguments.begin() + 1, entropic_off);
    arguments.push_back(nullptr);
    *argc += 1;
    *argv = arguments.data();
    return 0;
}

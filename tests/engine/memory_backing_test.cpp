// tests/engine/memory_backing_test.cpp
//
// Free page reporting detection against sysfs trees laid out as the kernel lays them out; the
// feature strings are those of this project's Firecracker VM (balloon with reporting, block
// device) and of a balloon without the reporting bit.
#include "ringload/memory_backing.hpp"

#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>

namespace ringload {
namespace {

namespace fs = std::filesystem;

// Feature bits 0-4 of a balloon and bit 5, VIRTIO_BALLOON_F_REPORTING, set (from the VM's sysfs).
constexpr const char* balloon_reporting =
    "01100101000000000000000000000000100000000000000000000000000000000000000000000000";
constexpr const char* balloon_without_reporting =
    "01100001000000000000000000000000100000000000000000000000000000000000000000000000";
// A virtio block device (id 2) whose bit 5 happens to be set: not a balloon.
constexpr const char* block_device = "00100110011001000000000000000100100000000000000000000000000000000000000000000000";

class FakeSysfs : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::temp_directory_path() / ("ringload-sysfs-" + std::to_string(::getpid()));
        fs::remove_all(root_);
        fs::create_directories(root_);
    }
    void TearDown() override { fs::remove_all(root_); }

    void add_device(const std::string& name, const std::string& id, const std::string& features) {
        fs::create_directories(root_ / name);
        std::ofstream(root_ / name / "device") << id << "\n";
        std::ofstream(root_ / name / "features") << features << "\n";
    }

    fs::path root_;
};

TEST_F(FakeSysfs, BalloonWithFreePageReportingIsFound) {
    add_device("virtio1", "0x0002", block_device);
    add_device("virtio0", "0x0005", balloon_reporting);
    EXPECT_TRUE(virtio_balloon_reports_free_pages(root_.string()));
}

TEST_F(FakeSysfs, BalloonWithoutReportingIsNot) {
    add_device("virtio0", "0x0005", balloon_without_reporting);
    EXPECT_FALSE(virtio_balloon_reports_free_pages(root_.string()));
}

TEST_F(FakeSysfs, OtherDevicesWithBitFiveAreNot) {
    add_device("virtio1", "0x0002", block_device);
    EXPECT_FALSE(virtio_balloon_reports_free_pages(root_.string()));
}

TEST_F(FakeSysfs, UnreadableOrMissingEntriesAreNot) {
    add_device("virtio0", "garbage", balloon_reporting);
    add_device("virtio2", "0x0005", "");
    fs::create_directories(root_ / "virtio3"); // no files at all
    EXPECT_FALSE(virtio_balloon_reports_free_pages(root_.string()));
    EXPECT_FALSE(virtio_balloon_reports_free_pages((root_ / "no-such-dir").string()));
}

} // namespace
} // namespace ringload

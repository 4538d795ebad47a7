// engine/include/ringload/engine/stages/decrypt.hpp
//
// Authenticates and decrypts a record's data, sealed as a run of XSalsa20-Poly1305 boxes
// ("cipher chunks", 2 MiB in tensorizer files). The boxes' MACs and nonces come from the
// record's header, so the stage is armed by the format's header hook; pieces that arrive
// before it are parked and replayed then: on the host copied into the tensor (their slot goes
// back at once, and their boxes open in place there), on the way to a device in their slot.
//
//  data:    [ box 0 ............ ][ box 1 ............ ][ box 2 ... ]
//  pieces:  [ slot 3     ][ slot 4 ........................ ][ slot 5 ]
//           box 0 gathers         box 1 opens from slot 4   box 2 gathers
//
// A box wholly in one piece opens straight into the place the destination offers (a host
// tensor: one pass over the bytes instead of a copy and a second pass), or where it lies in
// the slot (on its way to a device). A box that straddles pieces gathers where the destination
// offers (the host tensor itself, or page-locked staging) and opens there when its last byte
// arrives. Boxes open in parallel; one whose MAC fails never reaches the destination as
// plaintext and fails the load. The stages after this one see plaintext only.
//
// Thread: process() from any worker; arm() once, from the thread that read the header.
#pragma once

#include "ringload/engine/secretbox.hpp"
#include "ringload/engine/stage.hpp"

#include <atomic>
#include <map>
#include <mutex>
#include <vector>

namespace ringload {

// One box of a record's data.
struct SealedChunk {
    std::uint64_t offset_bytes = 0; // within the record's data
    std::uint64_t length_bytes = 0;
    Nonce nonce{};
    Mac mac{};
    std::uint64_t end_bytes() const noexcept { return offset_bytes + length_bytes; }
};

class Decrypt final : public Stage {
public:
    // `destination` (the record's, later in its chain) must outlive the stage.
    explicit Decrypt(Destination& destination) : destination_(destination) {}

    std::string_view name() const override { return "decrypt"; }
    // The boxes (in order, covering the data) and the key, which must outlive the stage;
    // replays the pieces that came before.
    Result<void> arm(std::vector<SealedChunk> chunks, const SecretKey& key);
    Result<void> process(Piece piece) override;
    Result<void> finish() override;
    void abandon() noexcept override;

private:
    struct Gathering {
        std::byte* bytes = nullptr;
        std::shared_ptr<const void> keep_alive; // staging; null in the host destination
    };

    bool armed();
    Result<void> take(const Piece& piece);
    Result<void> open_whole(std::size_t index, std::byte* ciphertext, const std::shared_ptr<const void>& keep_alive);
    Result<void> gather(std::size_t index, std::uint64_t from, std::uint64_t to, const std::byte* ciphertext);
    Result<Gathering> gathering_place(std::size_t index);
    Result<void> open(std::size_t index, std::span<std::byte> plaintext, std::span<const std::byte> ciphertext);

    Destination& destination_;
    std::mutex mutex_;
    bool armed_ = false;
    bool abandoned_ = false;
    std::vector<Piece> parked_;       // before arm()
    std::vector<SealedChunk> chunks_; // set once by arm(), read-only after
    const SecretKey* key_ = nullptr;
    std::vector<std::uint64_t> missing_; // bytes each box still lacks (gathering ones)
    std::map<std::size_t, Gathering> gathering_;
    std::atomic<std::size_t> opened_{0};
};

} // namespace ringload

// tests/fuzz/scripted_server.cpp
#include "scripted_server.hpp"

#include "fuzz_input.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ringload::fuzz {
namespace {

constexpr std::string_view connection_separator = "\n~~connection~~\n";
constexpr std::string_view wait_separator = "\n~~wait~~\n";

[[noreturn]] void die(const char* what) {
    std::perror(what);
    std::abort();
}

} // namespace

ScriptedServer& ScriptedServer::instance() {
    static ScriptedServer server;
    return server;
}

ScriptedServer::ScriptedServer() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listener_ < 0) {
        die("scripted server: socket");
    }
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof address;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&address), length) != 0 || ::listen(listener_, 64) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        die("scripted server: bind/listen on 127.0.0.1");
    }
    port_ = ntohs(address.sin_port);
}

std::string ScriptedServer::url(std::string_view path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + std::string(path);
}

void ScriptedServer::start(std::string_view input) {
    finish();
    scripts_.clear();
    for (std::string_view script : split(input, connection_separator)) {
        scripts_.push_back(split(script, wait_separator));
    }
}

void ScriptedServer::finish() {
    close_all();
    loop_.restart();
    loop_.run_for(std::chrono::seconds(5));
    if (!loop_.stopped()) {
        std::fputs("scripted server: the client left work on the loop that outlives its source\n", stderr);
        __builtin_trap();
    }
    close_all(); // connections made meanwhile
}

void ScriptedServer::close_all() {
    for (Connection& connection : connections_) {
        close(connection);
    }
    connections_.clear();
    while (accept_all()) {
    }
    for (Connection& connection : connections_) {
        close(connection); // connections of a client already gone
    }
    connections_.clear();
}

bool ScriptedServer::accept_all() {
    bool accepted = false;
    for (;;) {
        const int fd = ::accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            return accepted;
        }
        const int on = 1; // each chunk goes out at once, not after the client's delayed ACK (Nagle)
        ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
        Connection connection;
        connection.fd = fd;
        if (connections_.size() < scripts_.size()) {
            connection.chunks = scripts_[connections_.size()];
        }
        connections_.push_back(std::move(connection));
        accepted = true;
    }
}

// Reads (and drops) what the client sent; true when anything came, or EOF.
bool ScriptedServer::receive(Connection& connection) {
    bool got = false;
    char buffer[64 << 10];
    for (;;) {
        const ssize_t n = ::recv(connection.fd, buffer, sizeof buffer, 0);
        if (n > 0) {
            connection.heard = true;
            got = true;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return got;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        close(connection); // EOF or reset: the client is done with it
        return true;
    }
}

// Sends what the socket takes of the chunk under way; true when anything went.
bool ScriptedServer::send_unsent(Connection& connection) {
    bool sent = false;
    while (!connection.unsent.empty()) {
        const ssize_t n = ::send(connection.fd, connection.unsent.data(), connection.unsent.size(), MSG_NOSIGNAL);
        if (n > 0) {
            connection.unsent.remove_prefix(static_cast<std::size_t>(n));
            sent = true;
            continue;
        }
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return sent;
        }
        close(connection);
        return true;
    }
    return sent;
}

void ScriptedServer::close(Connection& connection) {
    if (!connection.closed && connection.fd >= 0) {
        ::close(connection.fd);
    }
    connection.closed = true;
    connection.unsent = {};
}

bool ScriptedServer::serve() {
    bool acted = accept_all();
    for (Connection& connection : connections_) {
        if (!connection.closed) {
            acted = receive(connection) || acted;
        }
    }
    for (Connection& connection : connections_) {
        if (!connection.closed) {
            acted = send_unsent(connection) || acted;
        }
    }
    if (acted) {
        return true; // let the client run first: it may send or read more
    }
    // The client waits: the next chunk, or EOF, on the first connection that owes one.
    for (Connection& connection : connections_) {
        if (connection.closed || !connection.heard || connection.shut || !connection.unsent.empty()) {
            continue;
        }
        if (connection.next_chunk < connection.chunks.size()) {
            connection.unsent = connection.chunks[connection.next_chunk++];
            send_unsent(connection);
        } else {
            ::shutdown(connection.fd, SHUT_WR);
            connection.shut = true;
        }
        return true;
    }
    return false;
}

} // namespace ringload::fuzz

// Every name resolves to the scripted server: a fuzz run never asks DNS, and a redirect or a
// key naming another host or port comes back to the script. Asio's resolver calls these.
extern "C" int getaddrinfo(const char* /*node*/, const char* /*service*/, const addrinfo* hints, addrinfo** result) {
    if (hints != nullptr && hints->ai_family != AF_UNSPEC && hints->ai_family != AF_INET) {
        return EAI_FAMILY;
    }
    struct Answer {
        addrinfo info;
        sockaddr_in address;
    };
    auto* answer = static_cast<Answer*>(std::calloc(1, sizeof(Answer)));
    if (answer == nullptr) {
        return EAI_MEMORY;
    }
    answer->address.sin_family = AF_INET;
    answer->address.sin_port = htons(ringload::fuzz::ScriptedServer::instance().port());
    answer->address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    answer->info.ai_family = AF_INET;
    answer->info.ai_socktype = SOCK_STREAM;
    answer->info.ai_protocol = IPPROTO_TCP;
    answer->info.ai_addrlen = sizeof(sockaddr_in);
    answer->info.ai_addr = reinterpret_cast<sockaddr*>(&answer->address);
    *result = &answer->info;
    return 0;
}

extern "C" void freeaddrinfo(addrinfo* result) noexcept {
    std::free(result); // one block: getaddrinfo above made it
}

import ContinuumCore
import ContinuumWire
import Foundation
import NIOConcurrencyHelpers
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// A flooding peer for the flood suites: its own socket and thread, writing the same frames over and over after a
/// HELLO and MEMBERSHIP, and reading what the node sends, until the node refuses it or time is up.
final class Flooder: Sendable {
    struct Outcome: Sendable {
        var error: WireError?
        var refusedAfter: Duration?
        /// When the node closed the connection (an end of stream or a reset), ERROR or not.
        var closedAfter: Duration?
        var types: [String] = []
    }

    private let identity = NodeIdentity.generate()
    /// The flooder's node id, as the node's log names it.
    var peer: AuthorID { identity.author }
    private let descriptor: Int32
    private let frames: [[UInt8]]
    private let outcome = NIOLockedValueBox(Outcome())
    private let done = DispatchSemaphore(value: 0)

    init(port: Int, frames: [[UInt8]]) throws {
        descriptor = try HTTPTestClient.connectLoopback(port, receiveTimeout: nil)
        var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        self.frames = frames
    }

    deinit { Glibc.close(descriptor) }

    func start(for limit: Duration) {
        let thread = Thread { [self] in
            run(limit)
            done.signal()
        }
        thread.start()
    }

    func wait() -> Outcome {
        done.wait()
        return outcome.withLockedValue { $0 }
    }

    private func handshake(_ decoder: inout FrameDecoder, _ buffer: inout [UInt8]) {
        let ours = RawClient.hello(for: identity)
        let hello = WireCodec.encode(.hello(ours))
        _ = hello.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var theirs: Hello?
        let deadline = ContinuousClock.now + .seconds(10)
        while theirs == nil, ContinuousClock.now < deadline {
            let count = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                decoder.append(buffer[0..<count])
                while let message = try? decoder.next() {
                    if case .hello(let hello) = message { theirs = hello }
                }
            } else if count == 0 {
                return
            } else {
                usleep(2_000)
            }
        }
        guard let theirs else { return }
        let membership = WireCodec.encode(.membership(RawClient.membership(for: identity, ours: ours, theirs: theirs)))
        _ = membership.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    private func run(_ limit: Duration) {
        var decoder = FrameDecoder()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        handshake(&decoder, &buffer)
        let started = ContinuousClock.now
        var index = 0
        var closed = false
        // The frame being written and how much of it is out (a write cut short goes on from there).
        var frame = frames[0]
        var offset = 0
        while ContinuousClock.now - started < limit + .seconds(2) {
            if !closed, ContinuousClock.now - started < limit {
                if offset == frame.count {
                    index += 1
                    frame = frames[index % frames.count]
                    offset = 0
                }
                let sent = frame[offset...].withUnsafeBytes {
                    Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
                }
                if sent > 0 {
                    offset += sent
                } else if !(sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                    closed = true
                }
            } else {
                usleep(5_000)
            }
            let count = buffer.withUnsafeMutableBytes {
                recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
            }
            if count > 0 {
                decoder.append(buffer[0..<count])
                while let message = try? decoder.next() {
                    let now = ContinuousClock.now
                    outcome.withLockedValue { outcome in
                        outcome.types.append(message.typeName)
                        if case .error(let error) = message, outcome.error == nil {
                            outcome.error = error
                            outcome.refusedAfter = now - started
                        }
                    }
                }
                if outcome.withLockedValue({ $0.error != nil }) { return }
            } else if count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                let now = ContinuousClock.now
                outcome.withLockedValue { $0.closedAfter = now - started }
                return
            }
        }
    }
}

import ContinuumWire
import NIOConcurrencyHelpers
import NIOCore

/// The messages waiting to be written to one peer, drained by the session's one writer task.
///
/// Queuing never waits, so that nothing shared (gossip, interest relay, the photo fetcher) can be held up by a peer
/// that does not read: a message goes in at once, urgent ones (pushes, INTEREST, ERROR) ahead of the rest. Senders
/// of bulk data (photo chunks, thumbnails) wait for room with ``waitForRoom()`` before each piece, so a transfer is
/// under the socket's back-pressure without holding anyone else. When more than ``cap`` bytes wait, the peer is
/// not reading what it asked for: ``enqueue(_:urgent:)`` says so, and the session ends.
final class Outbox: Sendable {
    /// Bulk senders wait while this much waits to be written.
    static let highWater = 2 << 20
    /// ... and go on once it is below this.
    static let lowWater = 1 << 20
    /// More than this waiting: the peer is not reading.
    static let cap = 32 << 20

    private struct State {
        // Ring buffers: a message taken is released at once (an array with a moving head kept up to 256 photo
        // chunks alive after they were written, 64 MiB).
        var urgent = CircularBuffer<WireMessage>()
        var normal = CircularBuffer<WireMessage>()
        var bytes = 0
        var writer: CheckedContinuation<WireMessage?, Never>?
        var roomWaiters: [CheckedContinuation<Void, Never>] = []
        var finished = false
        /// While corked, the writer waits even with messages queued (see ``Outbox/init(corked:)``).
        var corked = false

        /// The message the writer gets next: urgent ones first.
        var upNext: WireMessage? { urgent.first ?? normal.first }

        mutating func takeNext() -> WireMessage? {
            urgent.popFirst() ?? normal.popFirst()
        }
    }

    private let state: NIOLockedValueBox<State>

    /// `corked`: the writer waits until ``uncork()`` (a session's outbox starts so, until its opening is queued).
    init(corked: Bool = false) {
        var initial = State()
        initial.corked = corked
        state = NIOLockedValueBox(initial)
    }

    /// Queues `message`; false when it was not queued because the outbox is finished or over ``cap``.
    @discardableResult
    func enqueue(_ message: WireMessage, urgent: Bool = false) -> Bool {
        let writer: CheckedContinuation<WireMessage?, Never>? = state.withLockedValue { state in
            guard !state.finished, state.bytes <= Self.cap else { return nil }
            state.bytes += message.approximateBytes
            if !state.corked, let writer = state.writer {
                // The writer is waiting, so nothing else is queued: hand the message over directly.
                state.writer = nil
                return writer
            }
            if urgent { state.urgent.append(message) } else { state.normal.append(message) }
            return nil
        }
        if let writer {
            writer.resume(returning: message)
            return true
        }
        return state.withLockedValue { !$0.finished && $0.bytes <= Self.cap }
    }

    /// The writer's next message, urgent ones first; nil once finished (or when the writer's task is cancelled).
    func next() async -> WireMessage? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<WireMessage?, Never>) in
                let ready: WireMessage?? = state.withLockedValue { state in
                    if !state.corked, let message = state.takeNext() { return .some(message) }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.writer = continuation
                    return .none
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let writer = state.withLockedValue { state in
                defer { state.writer = nil }
                return state.writer
            }
            writer?.resume(returning: nil)
        }
    }

    /// Lets the writer go on with what was queued while corked (see ``init(corked:)``); for good: nothing corks an
    /// outbox again.
    func uncork() {
        let (writer, message): (CheckedContinuation<WireMessage?, Never>?, WireMessage?) = state.withLockedValue {
            state in
            state.corked = false
            guard let writer = state.writer, let message = state.takeNext() else { return (nil, nil) }
            state.writer = nil
            return (writer, message)
        }
        if let writer, let message { writer.resume(returning: message) }
    }

    /// After ``next()``: what else is queued right now, urgent first, in order, without waiting, stopping before
    /// `limit` bytes (approximate). The writer writes them with the first under one flush, so that small frames
    /// queued together share a TLS record.
    func takeQueued(limit: Int) -> [WireMessage] {
        state.withLockedValue { state in
            var taken: [WireMessage] = []
            var bytes = 0
            while let message = state.upNext {
                bytes += message.approximateBytes
                guard bytes <= limit else { break }
                _ = state.takeNext()
                taken.append(message)
            }
            return taken
        }
    }

    /// The writer wrote `message`: its bytes no longer wait.
    func wrote(_ message: WireMessage) {
        let waiters = state.withLockedValue { state in
            state.bytes = max(0, state.bytes - message.approximateBytes)
            guard state.bytes < Self.lowWater else { return [CheckedContinuation<Void, Never>]() }
            defer { state.roomWaiters = [] }
            return state.roomWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits until fewer than ``highWater`` bytes wait to be written (at once when the outbox is finished).
    func waitForRoom() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let wait = state.withLockedValue { state in
                guard !state.finished, state.bytes >= Self.highWater else { return false }
                state.roomWaiters.append(continuation)
                return true
            }
            if !wait { continuation.resume() }
        }
    }

    /// Bytes queued and not yet written.
    var backlog: Int { state.withLockedValue { $0.bytes } }

    /// Whether everything queued has been written (not only taken by the writer).
    var isDrained: Bool { state.withLockedValue { $0.bytes == 0 } }

    /// Whether a writer is parked in ``next()``, waiting for a message (tests wait for this rather than for time).
    var hasWaitingWriter: Bool { state.withLockedValue { $0.writer != nil } }

    /// How many bulk senders are parked in ``waitForRoom()``.
    var sendersWaitingForRoom: Int { state.withLockedValue { $0.roomWaiters.count } }

    /// Ends the outbox: what waits is dropped, the writer ends, bulk senders go on (and find the session closed).
    func finish() {
        let (writer, waiters) = state.withLockedValue { state in
            state.finished = true
            state.urgent.removeAll()
            state.normal.removeAll()
            defer {
                state.writer = nil
                state.roomWaiters = []
            }
            return (state.writer, state.roomWaiters)
        }
        writer?.resume(returning: nil)
        for waiter in waiters { waiter.resume() }
    }
}

extension WireMessage {
    /// Photo chunks and thumbnails: what bulk senders queue under ``Outbox/waitForRoom()``.
    var isBulk: Bool {
        switch self {
        case .photoData, .thumbData, .photos: true
        default: false
        }
    }

    /// About the bytes the message takes on the wire, for the outbox's accounting.
    var approximateBytes: Int {
        switch self {
        case .records(_, let records), .push(let records): 16 + records.reduce(0) { $0 + $1.count + 4 }
        case .photoData(_, _, let chunk): 80 + chunk.count
        case .thumbData(_, let bytes): 40 + bytes.count
        case .photos(let photos): 8 + photos.reduce(0) { $0 + 36 + ($1.bytes?.count ?? 0) }
        case .photosWant(let hashes): 8 + 32 * hashes.count
        case .clock(_, let clock), .ack(let clock): 16 + 40 * clock.heads.count
        case .clockSince(_, _, let changes): 48 + 40 * changes.heads.count
        case .interest(_, let entries): 8 + 33 * entries.count
        case .follows(let entries): 8 + 41 * entries.count
        case .request(let ranges): 8 + 48 * ranges.count
        default: 64
        }
    }
}

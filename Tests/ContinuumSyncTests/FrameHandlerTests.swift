import ContinuumCore
import ContinuumWire
import Foundation
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

@testable import ContinuumSync

/// The frame encoder gathers the small frames written before one flush into one buffer (one TLS record), and keeps
/// the order of everything written.
@Suite("Frame encoder: small frames share a buffer, order is kept")
struct FrameHandlerTests {
    private static let hash = AssetHash(unchecked: Data(repeating: 7, count: 32))

    /// Every buffer the channel wrote, and the messages they decode to.
    private static func written(_ channel: EmbeddedChannel) throws -> (buffers: [Int], messages: [WireMessage]) {
        var sizes: [Int] = []
        var decoder = FrameDecoder()
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            sizes.append(buffer.readableBytes)
            decoder.append(buffer.readableBytesView)
        }
        var messages: [WireMessage] = []
        while let message = try decoder.next() { messages.append(message) }
        return (sizes, messages)
    }

    @Test("small frames written before a flush leave as one buffer, nothing before the flush")
    func smallFramesShareABuffer() throws {
        let channel = EmbeddedChannel(handler: WireEncodingHandler())
        let sent: [WireMessage] = [.ping(1), .ack(VectorClock()), .done(round: 3), .pong(9)]
        for message in sent { channel.write(message, promise: nil) }
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil, "nothing leaves before the flush")
        channel.flush()
        let (buffers, messages) = try Self.written(channel)
        #expect(buffers.count == 1, "\(buffers)")
        #expect(buffers.first == sent.reduce(0) { $0 + WireCodec.encode($1).count })
        #expect(messages == sent)
        _ = try channel.finish()
    }

    @Test("a photo chunk goes on its own, after the small frames before it and before those after it")
    func largeFrameKeepsOrder() throws {
        let channel = EmbeddedChannel(handler: WireEncodingHandler())
        let chunk = [UInt8](repeating: 0xAB, count: 200_000)
        let sent: [WireMessage] = [
            .ping(1), .ping(2), .photoData(Self.hash, offset: 0, chunk: chunk),
            .photoEnd(Self.hash, totalBytes: 200_000),
        ]
        for message in sent { channel.write(message, promise: nil) }
        channel.flush()
        let (buffers, messages) = try Self.written(channel)
        #expect(buffers.count == 3, "\(buffers)")
        #expect(buffers[1] == WireCodec.encode(sent[2]).count)
        #expect(messages == sent)
        _ = try channel.finish()
    }

    @Test("the promise of a gathered frame completes once its buffer is written, not before the flush")
    func promises() throws {
        let channel = EmbeddedChannel(handler: WireEncodingHandler())
        let completed = Mutex<[Int]>([])
        for number in 1...2 {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            promise.futureResult.whenSuccess { completed.withLock { $0.append(number) } }
            channel.write(WireMessage.ping(UInt64(number)), promise: promise)
        }
        #expect(completed.withLock { $0 }.isEmpty, "gathered, not written yet")
        channel.flush()
        #expect(completed.withLock { $0 } == [1, 2])
        _ = try channel.finish()
    }
}

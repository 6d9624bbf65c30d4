import ContinuumCore
import ContinuumWire
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import Testing

@testable import ContinuumSync

/// The frame encoder: small frames written before one flush leave as one buffer (one TLS record), in order.
@Suite("Frame encoder: small frames share a TLS record")
struct FrameHandlerTests {
    private static func chunk(_ size: Int) -> WireMessage {
        .photoData(AssetHash(unchecked: Data(count: 32)), offset: 0, chunk: [UInt8](repeating: 7, count: size))
    }

    private static func written(_ channel: EmbeddedChannel) throws -> [[UInt8]] {
        var buffers: [[UInt8]] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) {
            buffers.append(Array(buffer.readableBytesView))
        }
        return buffers
    }

    @Test("frames written before a flush leave as one buffer, byte for byte their encodings; each flush ends one")
    func gathersUntilFlush() throws {
        let channel = EmbeddedChannel(handler: WireEncodingHandler())
        let first: [WireMessage] = [.ping(1), .done(round: 4), .pong(2)]
        var promises: [EventLoopFuture<Void>] = []
        for message in first {
            let promise = channel.eventLoop.makePromise(of: Void.self)
            channel.write(message, promise: promise)
            promises.append(promise.futureResult)
        }
        #expect(try Self.written(channel).isEmpty, "nothing leaves before the flush")
        channel.flush()
        channel.write(WireMessage.ping(3), promise: nil)
        channel.flush()
        let buffers = try Self.written(channel)
        #expect(buffers == [first.flatMap { WireCodec.encode($0) }, WireCodec.encode(.ping(3))])
        for future in promises { try future.wait() }
        _ = try channel.finish()
    }

    @Test("a frame too large to gather goes on its own, after what was gathered and before what follows")
    func largeFrameKeepsTheOrder() throws {
        let channel = EmbeddedChannel(handler: WireEncodingHandler())
        let large = Self.chunk(WireEncodingHandler.gatherLimit)
        channel.write(WireMessage.ping(1), promise: nil)
        channel.write(large, promise: nil)
        channel.write(WireMessage.ping(2), promise: nil)
        channel.flush()
        let buffers = try Self.written(channel)
        #expect(buffers == [WireCodec.encode(.ping(1)), WireCodec.encode(large), WireCodec.encode(.ping(2))])
        // The wire is what was written: decoding it back gives the messages in order.
        var decoder = FrameDecoder()
        decoder.append(buffers.flatMap { $0 })
        var decoded: [WireMessage] = []
        while let message = try decoder.next() { decoded.append(message) }
        #expect(decoded == [.ping(1), large, .ping(2)])
        _ = try channel.finish()
    }

    @Test("gathering stops before one TLS record's worth: the next frame starts a new buffer")
    func gatherLimit() throws {
        let channel = EmbeddedChannel(handler: WireEncodingHandler())
        let piece = Self.chunk(6 << 10)
        for _ in 0..<3 { channel.write(piece, promise: nil) }
        channel.flush()
        let buffers = try Self.written(channel)
        let one = WireCodec.encode(piece)
        #expect(buffers == [one + one, one])
        #expect(buffers.allSatisfy { $0.count <= WireEncodingHandler.gatherLimit })
        _ = try channel.finish()
    }

    @Test("frames gathered but never flushed fail their promises when the channel closes")
    func unflushedFailOnClose() throws {
        let channel = EmbeddedChannel(handler: WireEncodingHandler())
        let promise = channel.eventLoop.makePromise(of: Void.self)
        channel.write(WireMessage.ping(1), promise: promise)
        let failed = NIOLockedValueBox<(any Error)?>(nil)
        promise.futureResult.whenFailure { error in failed.withLockedValue { $0 = error } }
        _ = try? channel.close().wait()
        #expect(failed.withLockedValue { $0 } as? ChannelError == .ioOnClosedChannel)
        #expect(try Self.written(channel).isEmpty)
    }
}

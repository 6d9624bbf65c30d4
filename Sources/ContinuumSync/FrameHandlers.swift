import ContinuumWire
import NIOCore

/// Turns bytes into ``WireMessage``s with the pure ``FrameDecoder``; the first bad frame is an error that the
/// session answers with ERROR and a close.
final class WireDecodingHandler: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = WireMessage

    private var decoder = FrameDecoder()
    private var failed = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !failed else { return }
        let buffer = unwrapInboundIn(data)
        decoder.append(buffer.readableBytesView)
        do {
            while let message = try decoder.next() {
                context.fireChannelRead(wrapInboundOut(message))
            }
        } catch {
            failed = true
            context.fireErrorCaught(error)
        }
    }
}

/// Encodes outgoing ``WireMessage``s as frames.
final class WireEncodingHandler: ChannelOutboundHandler {
    typealias OutboundIn = WireMessage
    typealias OutboundOut = ByteBuffer

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        let frame = WireCodec.encode(unwrapOutboundIn(data))
        context.write(wrapOutboundOut(context.channel.allocator.buffer(bytes: frame)), promise: promise)
    }
}

/// Cuts a byte stream into frames and decodes each into a ``WireMessage``. Pure: feed it bytes, take messages.
///
/// The decoder checks each frame's header as soon as its bytes arrive, before the body: a length prefix over the
/// limit, under 2, an unknown version or an unknown type is refused at once, and the bytes after it are not kept.
/// It never allocates according to a length read from the wire. After the first error the decoder is finished:
/// ``next()`` throws the same error again, ``append(_:)`` discards, and the connection must be closed.
///
/// ```swift
/// var decoder = FrameDecoder()
/// decoder.append(bytesFromSocket)
/// while let message = try decoder.next() { handle(message) }
/// ```
public struct FrameDecoder: Sendable {
    /// The largest frame body accepted: version, type and payload, not counting the 4-byte length prefix.
    public let maxFrameBytes: Int

    private var buffer: [UInt8] = []
    /// Where the next frame starts in `buffer`.
    private var start = 0
    /// Frames decoded so far; the TLS check applies to the first one only.
    private var framesDecoded = 0
    /// The error that ended decoding, if any.
    private var failure: WireError?

    /// A decoder that refuses frames whose length is above `maxFrameBytes` (at least 2).
    public init(maxFrameBytes: Int = WireLimits.maxFrameBytes) {
        precondition(maxFrameBytes >= WireCodec.headerBytes, "a frame holds at least its version and type")
        self.maxFrameBytes = min(maxFrameBytes, Int(UInt32.max))
    }

    /// Bytes received and not yet decoded.
    public var bufferedBytes: Int { buffer.count - start }

    /// Adds bytes received from the peer. A bad header is found here already, so that the bytes of a frame that
    /// will be refused are not buffered; ``next()`` reports it.
    public mutating func append(_ bytes: some Sequence<UInt8>) {
        guard failure == nil else { return }
        buffer.append(contentsOf: bytes)
        do throws(WireError) {
            try checkHeader()
        } catch {
            fail(error)
        }
    }

    /// The next complete message, nil if more bytes are needed; throws on the first bad frame (the connection must
    /// then be closed).
    public mutating func next() throws(WireError) -> WireMessage? {
        if let failure { throw failure }
        do throws(WireError) {
            guard let length = try checkHeader(), bufferedBytes >= WireCodec.lengthPrefixBytes + length else {
                return nil
            }
            let bodyStart = start + WireCodec.lengthPrefixBytes
            let end = bodyStart + length
            let message = try WireCodec.decodePayload(
                type: buffer[bodyStart + 1],
                payload: buffer[(bodyStart + WireCodec.headerBytes)..<end]
            )
            start = end
            framesDecoded += 1
            compact()
            return message
        } catch {
            fail(error)
            throw error
        }
    }

    /// Checks as much of the next frame's header as has arrived. Returns the frame's length once the prefix is
    /// complete, nil before.
    @discardableResult
    private func checkHeader() throws(WireError) -> Int? {
        let available = bufferedBytes
        if framesDecoded == 0, available >= 2, Self.looksLikeTLS(buffer[start], buffer[start + 1]) {
            throw WireError(
                .plaintextRefused,
                "the peer speaks TLS; this node runs with --insecure-plaintext (both sides must set it)"
            )
        }
        guard available >= WireCodec.lengthPrefixBytes else { return nil }
        var value = 0
        for index in start..<start + WireCodec.lengthPrefixBytes { value = value << 8 | Int(buffer[index]) }
        guard value >= WireCodec.headerBytes else {
            throw WireError(
                .malformedFrame,
                "frame length \(value) is too short; a frame holds at least its version and type (2 bytes)"
            )
        }
        guard value <= maxFrameBytes else {
            throw WireError(.frameTooLarge, "frame length \(value) exceeds the limit of \(maxFrameBytes) bytes")
        }
        if available > WireCodec.lengthPrefixBytes {
            let version = buffer[start + WireCodec.lengthPrefixBytes]
            guard version == WireLimits.frameVersion else {
                throw WireError(
                    .unsupportedVersion,
                    "frame version \(version) is not supported; this node speaks version \(WireLimits.frameVersion)"
                )
            }
        }
        if available > WireCodec.lengthPrefixBytes + 1 {
            let type = buffer[start + WireCodec.lengthPrefixBytes + 1]
            guard WireCodec.isKnown(type: type) else { throw WireCodec.unknownType(type) }
        }
        return value
    }

    /// A TLS record starts with its content type (0x16 handshake, such as a ClientHello or ServerHello; 0x15 alert)
    /// and the major version 3. No continuum frame starts that way: its length would be far above the limit.
    private static func looksLikeTLS(_ first: UInt8, _ second: UInt8) -> Bool {
        (first == 0x16 || first == 0x15) && second == 0x03
    }

    private mutating func fail(_ error: WireError) {
        failure = error
        buffer = []
        start = 0
    }

    /// Drops decoded bytes: all of them when the buffer is used up, else once they are most of it.
    private mutating func compact() {
        if start == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= 1 << 16)
            start = 0
        } else if start >= 1 << 16, start * 2 >= buffer.count {
            buffer.removeSubrange(0..<start)
            start = 0
        }
    }
}

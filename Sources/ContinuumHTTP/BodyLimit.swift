import Hummingbird
import NIOCore

/// How large a request body may be, and the `413 too_large` that says so when it is larger (Docs/API.md, "Limits").
/// Every route that reads a body reads it through one of these, so that every over-limit body gets the same answer,
/// one that names its limit.
struct BodyLimit: Sendable {
    /// The most the body (for an upload: its photo) may carry.
    let bytes: Int64
    /// What is over the limit, as the message says it: "the request body", "the photo".
    let subject: String
    /// What the limit is for: "JSON", "uploads".
    let scope: String
    /// Where the limit is set, if it can be set: "--max-upload-mb".
    let option: String?
    /// The input field at fault, if one is.
    let field: String?
    /// Allowed beyond `bytes` for the whole body: an upload's other fields and multipart framing.
    let framing: Int64

    /// JSON bodies: 1 MiB, room for the largest real one (`POST /api/delete` with its 10,000 ids is under 700 KB).
    /// Under Hummingbird's own 2 MiB (`maxUploadSize`), so that its decoding of the collected body never refuses it.
    static let json = BodyLimit(
        bytes: 1_048_576,
        subject: "the request body",
        scope: "JSON",
        option: nil,
        field: nil,
        framing: 0
    )

    /// A photo upload: the photo may carry `--max-upload-mb`; the whole body 1 MiB more, for the other fields.
    static func upload(_ configuration: APIConfiguration) -> BodyLimit {
        BodyLimit(
            bytes: configuration.maxUploadBytes,
            subject: "the photo",
            scope: "uploads",
            option: "--max-upload-mb",
            field: "photo",
            framing: 1_048_576
        )
    }

    /// Hummingbird's own limit (`maxUploadSize`), for a body read without one of ours.
    static func framework(_ maxUploadSize: Int) -> BodyLimit {
        BodyLimit(
            bytes: Int64(maxUploadSize),
            subject: "the request body",
            scope: "this route",
            option: nil,
            field: nil,
            framing: 0
        )
    }

    /// The most the whole body may carry.
    var bodyBytes: Int64 { bytes + framing }

    /// `413 too_large`, naming the limit: "the request body is over the 1 MiB limit for JSON".
    var error: APIError {
        APIError(
            .contentTooLarge,
            "too_large",
            "\(subject) is over the \(Self.describe(bytes)) limit for \(scope)" + (option.map { " (see \($0))" } ?? ""),
            field: field
        )
    }

    /// `413 too_large` for a whole body over ``bodyBytes``: ``error`` when there is no allowance for framing.
    var bodyError: APIError {
        guard framing > 0 else { return error }
        return APIError(
            .contentTooLarge,
            "too_large",
            "the request body is over the \(Self.describe(bodyBytes)) limit for \(scope) (\(Self.describe(bytes)) for "
                + "\(subject)\(option.map { ", see \($0)" } ?? ""), and \(Self.describe(framing)) for the other fields)"
        )
    }

    /// Refuses at once a body whose `Content-Length` says it is over the limit, before any of it is read.
    func check(_ request: Request) throws {
        if let length = request.headers[.contentLength].flatMap({ Int64($0) }), length > bodyBytes {
            throw bodyError
        }
    }

    /// Counts a body read piece by piece: throws once `total` is over the limit (a body without `Content-Length`).
    func count(_ total: Int64) throws {
        if total > bodyBytes { throw bodyError }
    }

    /// The whole body, in memory: refused (never read further) once it is over the limit.
    func collect(_ request: Request) async throws -> ByteBuffer {
        try check(request)
        do {
            return try await request.body.collect(upTo: Int(clamping: bodyBytes))
        } catch is NIOTooManyBytesError {
            throw bodyError
        }
    }

    /// `1 MiB`, `512 KiB`, `1500 bytes`: whole units where the size has them.
    static func describe(_ bytes: Int64) -> String {
        if bytes >= 1_048_576, bytes % 1_048_576 == 0 { return "\(bytes / 1_048_576) MiB" }
        if bytes >= 1024, bytes % 1024 == 0 { return "\(bytes / 1024) KiB" }
        return "\(bytes) bytes"
    }
}

extension Request {
    /// A JSON body of `type`, read through ``BodyLimit/json`` and then decoded as Hummingbird decodes (its errors
    /// for JSON that is malformed or of the wrong shape).
    func decodeJSON<T: Decodable>(as type: T.Type, context: some RequestContext) async throws -> T {
        var collected = self
        collected.body = .init(buffer: try await BodyLimit.json.collect(self))
        return try await collected.decode(as: type, context: context)
    }
}

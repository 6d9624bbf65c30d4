import ContinuumCore
import ContinuumMedia
import ContinuumNode
import ContinuumStore
import Crypto
import Foundation
import Hummingbird
import NIOCore

/// Receives the `multipart/form-data` uploads of photos (`POST /api/posts`, `PUT /api/posts/{id}/photo`,
/// `POST /api/photos/inspect`): the photo part is streamed to a temporary file with a running SHA-256, never held
/// whole in memory, within the upload limit.
struct UploadReceiver: Sendable {
    /// Where the temporary file of the photo is made.
    let assets: AssetStore
    /// What an upload may carry (``BodyLimit/upload(_:)``, `--max-upload-mb`).
    let limit: BodyLimit

    /// Receives a `multipart/form-data` body within the upload limit, its photo part streamed to a temporary file
    /// with a running SHA-256, and runs `body` on it; the temporary file goes afterwards unless `body` moved it.
    /// 400 `not_multipart` ("send `describing`") or `missing_photo` (`photoMissing`) when there is no photo part.
    func receive(
        _ request: Request,
        describing: String,
        photoMissing: String,
        _ body: (UploadState, UploadState.Photo) async throws -> Response
    ) async throws -> Response {
        guard let type = request.headers[.contentType], let boundary = Self.boundary(of: type) else {
            throw APIError(.badRequest, "not_multipart", "send \(describing)")
        }
        try limit.check(request)
        let upload = UploadState(assets: assets, limit: limit)
        defer { upload.discard() }
        try await read(request, boundary: boundary, into: upload)
        guard let photo = try upload.finish() else {
            throw APIError(.badRequest, "missing_photo", photoMissing, field: "photo")
        }
        return try await body(upload, photo)
    }

    /// Runs a write that takes an uploaded photo, turning the photo's refusals into the API's errors.
    static func refusingBadPhotos<T>(_ upload: UploadState, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch PhotoRefusal.notAnImage(let why) {
            throw APIError(
                .unsupportedMediaType,
                "not_an_image",
                "\(upload.filename ?? "the file"): \(why)",
                field: "photo"
            )
        } catch PhotoRefusal.corrupt(let why) {
            throw APIError(
                .unprocessableContent,
                "corrupt_image",
                "\(upload.filename ?? "the file"): \(why)",
                field: "photo"
            )
        } catch PhotoRefusal.noLocation(let why) {
            throw APIError(
                .unprocessableContent,
                "no_location",
                "\(upload.filename ?? "the file"): \(why); give a location, or post it without one",
                field: "locationFromPhoto"
            )
        } catch let error as MediaError where error.kind == .locationNotRemovable {
            let message = error.message.replacingOccurrences(
                of: MetadataCleaner.keepMetadataHint,
                with: "send keepMetadata=true to post it as it is, with its location"
            )
            throw APIError(
                .unprocessableContent,
                "location_not_removable",
                "\(upload.filename ?? "the file"): \(message)",
                field: "photo"
            )
        }
    }

    /// Reads the multipart body into `upload`, within the upload limit.
    private func read(_ request: Request, boundary: String, into upload: UploadState) async throws {
        var reader = MultipartReader(boundary: boundary)
        var received: Int64 = 0
        do {
            for try await chunk in request.body {
                received += Int64(chunk.readableBytes)
                try limit.count(received)
                try chunk.withUnsafeReadableBytes { bytes in
                    try reader.feed(bytes) { event in
                        switch event {
                        case .headers(let headers): upload.begin(headers)
                        case .body(let bytes): upload.body(bytes)
                        case .partEnd: upload.partComplete()
                        }
                    }
                }
                if let error = upload.error { throw error }
            }
            try reader.finish()
        } catch let error as APIError {
            throw error
        } catch {
            throw APIError.badRequest("the multipart body is malformed: \(error)")
        }
        if let error = upload.error { throw error }
    }

    /// The boundary of a `multipart/form-data` content type.
    static func boundary(of contentType: String) -> String? {
        let parts = contentType.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.first?.lowercased() == "multipart/form-data" else { return nil }
        for part in parts.dropFirst() where part.lowercased().hasPrefix("boundary=") {
            var value = String(part.dropFirst("boundary=".count))
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                value = String(value.dropFirst().dropLast())
            }
            return value.isEmpty || value.utf8.count > 70 ? nil : value
        }
        return nil
    }
}

/// The parts of one upload as the parser meets them: the photo goes to a file, small fields to memory.
///
/// Used by one request's task only (the parser calls back synchronously from `execute`), so it needs no lock.
final class UploadState {
    static let fieldLimit = 16 * 1024

    private let assets: AssetStore
    private let limit: BodyLimit
    private var headers: [String: String] = [:]
    private var field: [UInt8] = []
    private var file: FileHandle?
    private var fileURL: URL?
    private var hasher = SHA256()
    private var written: Int64 = 0
    private var photoDone = false
    private(set) var fields: [String: String] = [:]
    private(set) var filename: String?
    private(set) var error: APIError?

    init(assets: AssetStore, limit: BodyLimit) {
        self.assets = assets
        self.limit = limit
    }

    private var name: String? { Self.parameter("name", in: headers["content-disposition"] ?? "") }

    func begin(_ headers: [String: String]) { self.headers = headers }

    func body(_ buffer: UnsafeRawBufferPointer) {
        guard error == nil else { return }
        if name == "photo" {
            if photoDone {
                error = APIError.badRequest("send one photo per post", field: "photo")
                return
            }
            do {
                if file == nil {
                    let url = try assets.makeTemporaryFile()
                    fileURL = url
                    file = try FileHandle(forWritingTo: url)
                    filename = Self.parameter("filename", in: headers["content-disposition"] ?? "")
                }
                written += Int64(buffer.count)
                if written > limit.bytes {
                    error = limit.error
                    return
                }
                hasher.update(bufferPointer: buffer)
                try file?.write(contentsOf: Data(buffer))
            } catch {
                self.error = APIError(.internalServerError, "internal", "cannot write the upload: \(error)")
            }
        } else {
            guard field.count + buffer.count <= Self.fieldLimit else {
                error = APIError.badRequest("the field '\(name ?? "?")' is longer than 16 KiB", field: name)
                return
            }
            field.append(contentsOf: buffer)
        }
    }

    func partComplete() {
        defer {
            headers = [:]
            field = []
        }
        guard error == nil, let name else { return }
        if name == "photo" {
            photoDone = file != nil
        } else if fields[name] == nil {
            fields[name] = String(decoding: field, as: UTF8.self)
        }
    }

    struct Photo {
        let url: URL
        let hash: AssetHash
        let bytes: UInt64
    }

    /// Flushes the photo to disk; nil when the upload had no (non-empty) photo.
    func finish() throws -> Photo? {
        guard let file, let fileURL, written > 0 else { return nil }
        do {
            try file.synchronize()
            try file.close()
        } catch {
            throw APIError(.internalServerError, "internal", "cannot write the upload: \(error)")
        }
        self.file = nil
        return Photo(url: fileURL, hash: AssetHash(unchecked: Data(hasher.finalize())), bytes: UInt64(written))
    }

    /// Removes the temporary file unless it was committed (renamed away) already.
    func discard() {
        // Best effort: the file is not kept (one kept was moved away already), so a close error loses nothing; a
        // file left behind is in photos/tmp, removed once a day old when the store is next opened.
        try? file?.close()
        if let fileURL { try? FileManager.default.removeItem(at: fileURL) }
    }

    /// `name` or `filename` from a Content-Disposition value.
    static func parameter(_ key: String, in disposition: String) -> String? {
        for part in disposition.split(separator: ";") {
            let pair = part.trimmingCharacters(in: .whitespaces)
            guard pair.lowercased().hasPrefix("\(key)=") else { continue }
            var value = String(pair.dropFirst(key.count + 1))
            if value.hasPrefix("\""), value.hasSuffix("\""), value.count >= 2 {
                value = String(value.dropFirst().dropLast())
            }
            return value
        }
        return nil
    }
}

/// The upload's form fields, read as the routes take them.
extension UploadState {
    /// The `takenAt` field: an RFC 3339 time, or nil when absent or empty.
    func takenAt() throws -> Timestamp? {
        guard let text = fields["takenAt"], !text.isEmpty else { return nil }
        guard let time = Timestamp(rfc3339: text) else {
            throw APIError.badRequest("takenAt '\(text)' is not an RFC 3339 time", field: "takenAt")
        }
        return time
    }

    /// A true-or-false field: `true`/`1`/`on` (a ticked checkbox) or `false`/`0`; absent or empty: `default`.
    func flag(_ name: String, default value: Bool) throws -> Bool {
        guard let text = fields[name]?.trimmingCharacters(in: .whitespaces).lowercased(), !text.isEmpty else {
            return value
        }
        switch text {
        case "true", "1", "on": return true
        case "false", "0", "off": return false
        default: throw APIError.badRequest("\(name) must be true or false, not '\(text)'", field: name)
        }
    }
}

/// What `POST /api/photos/inspect` answers.
struct InspectedPhotoJSON: Encodable, Sendable {
    let mediaType: String
    let width: UInt32
    let height: UInt32
    @Nullable var location: Coordinate?
    @Nullable var takenAt: RFC3339Time?

    init(_ photo: InspectedPhoto) {
        mediaType = photo.info.mediaType.mimeType
        width = photo.info.width
        height = photo.info.height
        location = photo.location
        takenAt = photo.takenAt.map(RFC3339Time.init)
    }
}

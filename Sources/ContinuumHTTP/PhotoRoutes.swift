import ContinuumCore
import ContinuumMedia
import ContinuumNode
import ContinuumStore
import Foundation
import Hummingbird
import NIOCore

/// Photos and their thumbnails, by SHA-256, and the check of a photo before it is posted.
struct PhotoRoutes: Sendable {
    let store: ContinuumStore
    /// Makes and caches the grid's thumbnails; nil where there are none.
    let thumbnails: (any ThumbnailProviding)?
    /// Checks a photo for `POST /api/photos/inspect`.
    let inspector: any PhotoInspecting
    /// Receives the photo to inspect.
    let uploads: UploadReceiver
    /// A guest's session sees its group's photos alone.
    var scope = GuestScope()

    /// Adds the photo routes to `api` (the `/api` group).
    func register(on api: RouterGroup<BasicRequestContext>) {
        api.post("photos/inspect") { request, context in try await inspectPhoto(request, context: context) }
        api.get("photos/:sha256") { request, context in try await photo(request, context: context) }
        api.get("photos/:sha256/thumbnail") { request, context in try await thumbnail(request, context: context) }
    }

    /// A photo's bytes never change, but a photo can be erased (its post deleted, its photo replaced): a browser
    /// may keep it, but must ask again before each use (a 304 from the ETag, or a 404 once erased), so that an
    /// erased photo does not live on in caches. Not for shared caches.
    static let revalidate = "private, no-cache"

    /// `GET /api/photos/{sha256}`: the exact bytes, named by their hash; revalidated by ETag (they may be erased);
    /// Range requests.
    func photo(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let hash = try photoHash(context)
        guard try await store.hasPhoto(hash), try await scope.shows(hash, to: request, in: store) else {
            // A browser that opened the address itself (a download link) gets a page, not the JSON error.
            if request.headers[.accept]?.contains("text/html") == true {
                return Self.notHerePage(hash)
            }
            throw APIError(
                .notFound,
                "unknown_photo",
                "photo \(hash.short) is not on this node: its post may still be arriving from a peer, or it was erased "
                    + "(its post deleted, or its photo replaced)"
            )
        }
        let type = try await store.mediaType(ofPhoto: hash)?.mimeType ?? "application/octet-stream"
        var headers: HTTPFields = [
            .contentType: type, .eTag: "\"\(hash.hex)\"", .cacheControl: Self.revalidate, .acceptRanges: "bytes",
        ]
        if request.formQuery.get("download") != nil {
            let ext = String(type.split(separator: "/").last ?? "bin").replacingOccurrences(of: "jpeg", with: "jpg")
            headers[.contentDisposition] = "attachment; filename=\"\(hash.short).\(ext)\""
        }
        // A small photo that came whole from a peer is kept in the store, not as a file.
        let content = try await store.photoContent(hash)
        return try await file(
            store.assets.url(for: hash),
            content: content,
            etag: "\"\(hash.hex)\"",
            headers: headers,
            request,
            context
        )
    }

    /// A short HTML page for a person who opened the address of a photo that is not here.
    static func notHerePage(_ hash: AssetHash) -> Response {
        let html = """
            <!doctype html><html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1"><title>Photo not here</title></head>
            <body style="font-family: system-ui, sans-serif; max-width: 40em; margin: 3em auto; padding: 0 1em">
            <h1>This photo is not on this node</h1>
            <p>Photo \(hash.short) has not arrived from a peer yet, or it was erased: its post was deleted, or its
            photo replaced. A photo over this node's size limit arrives only when asked: open its post and press
            Fetch.</p><p><a href="/">Back to the timeline</a></p></body></html>
            """
        return Response(
            status: .notFound,
            headers: [.contentType: "text/html; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: html))
        )
    }

    /// `GET /api/photos/{sha256}/thumbnail`: a small JPEG for the grid, made once and cached by the node.
    func thumbnail(_ request: Request, context: BasicRequestContext) async throws -> Response {
        let hash = try photoHash(context)
        guard try await scope.shows(hash, to: request, in: store), let url = try await thumbnails?.thumbnail(for: hash)
        else {
            throw APIError(
                .notFound,
                "thumbnail_not_here",
                "no thumbnail of \(hash.short) yet: neither the photo nor its thumbnail has reached this node"
            )
        }
        // A thumbnail from a peer is replaced by this node's own once the photo arrives: cache by version.
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
        let modified = Int((attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0)
        let etag = "\"thumb-\(hash.hex.prefix(16))-\(size)-\(modified)\""
        let headers: HTTPFields = [.contentType: "image/jpeg", .eTag: etag, .cacheControl: Self.revalidate]
        return try await file(url, etag: etag, headers: headers, request, context)
    }

    /// A file, whole or the one byte range asked for; 304 when the client's copy is current.
    func file(
        _ url: URL,
        content: Data? = nil,
        etag: String,
        headers: HTTPFields,
        _ request: Request,
        _ context: BasicRequestContext
    ) async throws -> Response {
        var headers = headers
        if let match = request.headers[.ifNoneMatch],
            match.split(separator: ",").contains(where: {
                $0.trimmingCharacters(in: .whitespaces) == etag || $0.trimmingCharacters(in: .whitespaces) == "*"
            })
        {
            return Response(status: .notModified, headers: headers)
        }
        let size =
            try content?.count
            ?? ((FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.intValue ?? 0)
        let io = FileIO()
        if let range = request.headers[.range], request.headers[.ifRange].map({ $0 == etag }) ?? true {
            guard let bytes = Self.byteRange(range, size: size) else {
                var error = APIError(
                    .rangeNotSatisfiable,
                    "bad_range",
                    "the range '\(range)' is outside the file's \(size) bytes"
                )
                error.headers[.contentRange] = "bytes */\(size)"
                throw error
            }
            if let bytes {
                headers[.contentRange] = "bytes \(bytes.lowerBound)-\(bytes.upperBound)/\(size)"
                headers[.contentLength] = "\(bytes.count)"
                let body =
                    if let content {
                        ResponseBody(byteBuffer: ByteBuffer(bytes: content[bytes.lowerBound...bytes.upperBound]))
                    } else {
                        try await io.loadFile(path: url.path, range: bytes, context: context)
                    }
                return Response(status: .partialContent, headers: headers, body: body)
            }
        }
        headers[.contentLength] = "\(size)"
        if let content {
            return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(data: content)))
        }
        return Response(status: .ok, headers: headers, body: try await io.loadFile(path: url.path, context: context))
    }

    /// One range of `bytes=a-b`, `bytes=a-` or `bytes=-n`. nil: unsatisfiable; `.some(nil)`: ignore the header
    /// (not a single byte range; the whole file is sent, as RFC 9110 allows).
    static func byteRange(_ header: String, size: Int) -> ClosedRange<Int>?? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return .some(nil) }
        let spec = header.dropFirst("bytes=".count).split(separator: "-", omittingEmptySubsequences: false)
        guard spec.count == 2 else { return .some(nil) }
        let first = Int(spec[0].trimmingCharacters(in: .whitespaces))
        let last = Int(spec[1].trimmingCharacters(in: .whitespaces))
        switch (first, last) {
        case (let a?, let b?) where a <= b:
            guard a < size else { return nil }
            return .some(a...min(b, size - 1))
        case (let a?, nil) where spec[1].isEmpty:
            guard a < size else { return nil }
            return .some(a...(size - 1))
        case (nil, let n?) where spec[0].isEmpty:
            guard n > 0, size > 0 else { return nil }
            return .some(max(0, size - n)...(size - 1))
        default:
            return .some(nil)
        }
    }

    /// `POST /api/photos/inspect`: a `multipart/form-data` body with a `photo` part, received like an upload and
    /// then removed; answers what a post of it would use: `{"mediaType", "width", "height", "location", "takenAt"}`
    /// (`location` and `takenAt` null when the photo has none). Nothing is stored.
    func inspectPhoto(_ request: Request, context: BasicRequestContext) async throws -> Response {
        try await uploads.receive(
            request,
            describing: "the photo as multipart/form-data with a field photo",
            photoMissing: "choose a photo (field 'photo')"
        ) { upload, photo in
            let inspected = try await UploadReceiver.refusingBadPhotos(upload) {
                try await inspector.inspect(file: photo.url)
            }
            return try json(InspectedPhotoJSON(inspected))
        }
    }
}

extension PhotoRoutes {
    /// The photo routes over the parts of `services` they use, receiving photos with `uploads`.
    init(_ services: APIServices, uploads: UploadReceiver) {
        self.init(
            store: services.store,
            thumbnails: services.thumbnails,
            inspector: services.inspector,
            uploads: uploads
        )
    }
}

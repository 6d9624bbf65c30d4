import ContinuumHTTP
import ContinuumMedia
import ContinuumNode
import ContinuumStore
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOEmbedded
import Synchronization
import Testing

/// An answer of the router, as a test sees it.
struct InProcessResponse: Sendable {
    let status: Int
    let headers: HTTPFields
    let body: Data

    var text: String { String(decoding: body, as: UTF8.self) }
    /// The body as JSON; nil when it is not JSON.
    var json: Any? {
        // A body that is not JSON (a page, a photo) is nil here: the tests that read JSON check it is there.
        try? JSONSerialization.jsonObject(with: body)
    }
    var object: [String: Any] { json as? [String: Any] ?? [:] }
    /// The `error` code of an API error body.
    var errorCode: String? { object["error"] as? String }
    var errorMessage: String { object["message"] as? String ?? "" }
    var contentType: String? { headers[.contentType] }
}

/// A node opened in-process on a fresh temporary directory, and its HTTP API's router answering requests without a
/// socket, as Hummingbird's `RouterTestFramework` does: nothing listens (the node is never started), each request
/// goes straight to the router's responder with a context on an embedded channel, and the response body is
/// collected. Open one with ``with(_:_:)``, which closes the node and removes its directory afterwards.
final class InProcessAPI: Sendable {
    let node: Node
    /// What the API acts on, as `run` builds it.
    let services: APIServices
    /// The same actions with thumbnails made before they return, for a test's own setup.
    let actions: NodeActions
    private let responder: RouterResponder<BasicRequestContext>
    private let logger: Logger
    private let directory: URL

    /// The authority requests are for unless they set a `Host`: the API's default address.
    static let authority = "127.0.0.1:7421"

    private init(configuration: APIConfiguration) throws {
        var logger = Logger(label: "continuum.test.http")
        logger.logLevel = .warning
        self.logger = logger
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("continuum-http-\(UUID())")
        node = try Node(directory: DataDirectory(url: directory), configuration: NodeConfiguration(), logger: logger)
        // As RunCommand.apiServer builds it.
        services = APIServices(
            node: node,
            inspector: MediaInspector(thumbnails: node.thumbnails),
            thumbnails: node.thumbnails
        )
        actions = NodeActions(
            store: node.store,
            engine: node.engine,
            inspector: MediaInspector(thumbnails: node.thumbnails),
            thumbnails: node.thumbnails,
            thumbnailing: .beforeReturning
        )
        let server = APIServer(configuration: configuration, services: services, logger: logger)
        responder = server.buildRouter().buildResponder()
    }

    /// Runs `body` on a new node's API; closes the node and removes its directory afterwards, also when it throws.
    static func with<T>(
        _ configuration: APIConfiguration = APIConfiguration(),
        _ body: (InProcessAPI) async throws -> T
    ) async throws -> T {
        let api = try InProcessAPI(configuration: configuration)
        do {
            let result = try await body(api)
            await api.close()
            return result
        } catch {
            await api.close()
            throw error
        }
    }

    private func close() async {
        await node.close()
        do {
            try FileManager.default.removeItem(at: directory)
        } catch {
            logger.warning("could not remove a test directory", metadata: ["path": "\(directory.path)"])
        }
    }

    /// The node's store.
    var store: ContinuumStore { node.store }

    /// The folder the node keeps its photos in.
    var photos: URL { directory.appendingPathComponent("photos") }

    // MARK: Requests

    /// A GET, for `host` (the API's default address unless given).
    func get(
        _ path: String,
        headers: HTTPFields = [:],
        host: String = InProcessAPI.authority
    ) async throws -> InProcessResponse {
        try await request(.get, path, headers: headers, host: host)
    }

    /// A request with a JSON body.
    func send(
        _ method: HTTPRequest.Method,
        _ path: String,
        json: Any,
        headers: HTTPFields = [:]
    ) async throws -> InProcessResponse {
        let body = try JSONSerialization.data(withJSONObject: json)
        var headers = headers
        headers[.contentType] = "application/json"
        return try await request(method, path, headers: headers, body: body)
    }

    /// A multipart/form-data upload: text fields, and files as (name, filename, bytes).
    func upload(
        _ path: String = "/api/posts",
        method: HTTPRequest.Method = .post,
        fields: [(String, String)],
        files: [(String, String, Data)],
        headers: HTTPFields = [:]
    ) async throws -> InProcessResponse {
        let boundary = "----continuum-test-\(UUID().uuidString)"
        var body = Data()
        for (name, value) in fields {
            body.append(Data("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n".utf8))
            body.append(Data(value.utf8))
            body.append(Data("\r\n".utf8))
        }
        for (name, filename, bytes) in files {
            body.append(
                Data(
                    ("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\n"
                        + "Content-Type: application/octet-stream\r\n\r\n").utf8
                )
            )
            body.append(bytes)
            body.append(Data("\r\n".utf8))
        }
        body.append(Data("--\(boundary)--\r\n".utf8))
        var headers = headers
        headers[.contentType] = "multipart/form-data; boundary=\(boundary)"
        return try await request(method, path, headers: headers, body: body)
    }

    /// Sends one request to the router and collects its answer. `host` is the request's authority (HTTP/1.1's
    /// `Host` on a real socket); a body gets its `Content-Length`.
    func request(
        _ method: HTTPRequest.Method,
        _ path: String,
        headers: HTTPFields = [:],
        host: String = InProcessAPI.authority,
        body: Data? = nil
    ) async throws -> InProcessResponse {
        var headers = headers
        if let body { headers[.contentLength] = "\(body.count)" }
        let request = Request(
            head: HTTPRequest(method: method, scheme: "http", authority: host, path: path, headerFields: headers),
            body: RequestBody(buffer: ByteBuffer(bytes: body ?? Data()))
        )
        let context = BasicRequestContext(
            source: ApplicationRequestContextSource(channel: EmbeddedChannel(), logger: logger)
        )
        let response = try await responder.respond(to: request, context: context)
        let collector = BodyCollector()
        try await response.body.write(collector)
        return InProcessResponse(status: response.status.code, headers: response.headers, body: collector.data)
    }
}

/// Collects a response body as the server would write it to the socket.
private final class BodyCollector: ResponseBodyWriter, Sendable {
    private let collected = Mutex(Data())

    var data: Data { collected.withLock { $0 } }

    func write(_ buffer: ByteBuffer) async throws {
        collected.withLock { $0.append(contentsOf: buffer.readableBytesView) }
    }

    func finish(_ trailingHeaders: HTTPFields?) async throws {}
}

/// What the group routes' bad input must leave alone, read from the store: the groups, the members of each (removed
/// ones too), every request to join (denied ones too), the blocked authors, and the stamp of the store's write-ahead
/// log, which changes whenever anything is committed (an invite, which no read lists, included).
struct GroupState: Equatable {
    let groups: [GroupSummary]
    let members: [[MemberSummary]]
    let requests: [JoinRequest]
    let blocked: [BlockedAuthor]
    let writes: [Int]?

    init(_ api: InProcessAPI) async throws {
        groups = try await api.store.groups()
        var members: [[MemberSummary]] = []
        for group in groups { members.append(try await api.store.members(of: group.id)) }
        self.members = members
        requests = try await api.store.joinRequests(includingDenied: true)
        blocked = try await api.store.blockedAuthors()
        writes = api.store.writeStamp()
    }
}

extension InProcessResponse {
    /// Checks a refusal as a person sees it: its status and error code, a message that mentions `message`, the JSON
    /// content type and the error body's keys (`what` names the request in a failure).
    func expectRefusal(
        status: Int,
        code: String,
        message: String,
        of what: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        #expect(self.status == status, "\(what): \(self.status) \(text)", sourceLocation: sourceLocation)
        #expect(errorCode == code, "\(what): \(text)", sourceLocation: sourceLocation)
        #expect(
            errorMessage.contains(message),
            "\(what): message '\(errorMessage)' should mention '\(message)'",
            sourceLocation: sourceLocation
        )
        #expect(contentType == "application/json; charset=utf-8", "\(what)", sourceLocation: sourceLocation)
        #expect(BadInputTests.isErrorBody(self), "\(what): \(text)", sourceLocation: sourceLocation)
    }
}

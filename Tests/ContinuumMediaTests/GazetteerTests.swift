import ContinuumCore
import ContinuumMedia
import Testing

/// Places offline, from Debian's libgeonames: expected values are the atlas's, not the code's.
@Suite("Gazetteer: the nearest city, and cities by name")
struct GazetteerTests {
    let gazetteer = Gazetteer()

    @Test("a position names its city and country: Paris, Ålesund, Sydney; the distance to it")
    func nearest() throws {
        let cases: [(Double, Double, String, String, String)] = [
            (48.8566, 2.3522, "Paris", "France", "FR"),
            (62.4722, 6.1495, "Ålesund", "Norway", "NO"),
            (-33.8688, 151.2093, "Sydney", "Australia", "AU"),
        ]
        for (latitude, longitude, name, country, code) in cases {
            let at = try #require(Coordinate(latitude: latitude, longitude: longitude))
            let found = try #require(gazetteer.nearest(to: at))
            #expect(found.place.name == name && found.place.country == country, "\(found.place)")
            #expect(found.place.countryCode == code && found.place.title == "\(name), \(country)")
            #expect(found.distanceKm < 5, "\(found.distanceKm) km from \(name)")
        }
        // The middle of the Atlantic: still the nearest city, and far from it.
        let atlantic = try #require(Coordinate(latitude: 30, longitude: -40))
        let sea = try #require(gazetteer.nearest(to: atlantic))
        #expect(sea.distanceKm > 500, "\(sea)")
    }

    @Test("a name finds its cities, the most populous first, case and accents aside; nonsense finds none")
    func byName() throws {
        let paris = gazetteer.find("paris")
        #expect(paris.first?.name == "Paris" && paris.first?.country == "France", "\(paris)")
        #expect(paris.contains { $0.country == "United States of America" }, "Paris, Texas: \(paris)")
        let first = try #require(paris.first)
        let centre = try #require(Coordinate(latitude: 48.8566, longitude: 2.3522))
        #expect(gazetteer.nearest(to: first.coordinate)?.place == first)
        #expect(abs(first.coordinate.latitude - centre.latitude) < 0.1)
        #expect(gazetteer.find("ALESUND").first?.name == "Ålesund")
        #expect(gazetteer.find("zzzzqx").isEmpty)
        #expect(gazetteer.find("   ").isEmpty)
        #expect(gazetteer.find("paris", limit: 1).count == 1)
    }
}

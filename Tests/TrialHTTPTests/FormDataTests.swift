import Testing

@testable import TrialHTTP

/// The forms pages post, and where a login may send its user.
struct FormDataTests {
  @Test func decode_PlusAndPercent_BadEscapesRefused() {
    #expect(
      FormData.decode(Array("token=a+b%2Bc&next=%2Fplans%3Fx%3D1&empty=&flag".utf8))
        == ["token": "a b+c", "next": "/plans?x=1", "empty": "", "flag": ""])
    #expect(FormData.decode(Array("a=%2".utf8)) == nil)
    #expect(FormData.decode(Array("a=%+1".utf8)) == nil)
    #expect(FormData.decode(Array("a=%FF".utf8)) == nil)
    #expect(FormData.decode(Array("a=%C3%A9".utf8)) == ["a": "é"])
    #expect(FormData.encode("plan=pro & x/é") == "plan%3Dpro%20%26%20x%2F%C3%A9")
  }

  @Test func next_OnlyPathsOfTheGateway() {
    #expect(Gateway.safeNext("/cohorts?plan=pro") == "/cohorts?plan=pro")
    for away in ["//evil.example/", "https://evil.example/", "/\\evil.example", "plans", "/a b", nil] {
      #expect(Gateway.safeNext(away) == nil, "\(away ?? "nil")")
    }
  }
}

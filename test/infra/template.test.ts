/**
 * Assertions on the synthesized template, one suite per concern. They share one process so the
 * handlers are bundled once (see fixture.ts); each suite names the properties it checks.
 */
import { alarmsSuite } from "./suites/alarms.js";
import { apiSuite } from "./suites/api.js";
import { checksSuite } from "./suites/checks.js";
import { functionsSuite } from "./suites/functions.js";
import { iamSuite } from "./suites/iam.js";
import { storageSuite } from "./suites/storage.js";

storageSuite();
functionsSuite();
apiSuite();
iamSuite();
alarmsSuite();
checksSuite();
